"""scripts/gpu_check.sh, the one-shot check of the CUDA paths, run as it falls back on a
machine without a GPU: every stage (CPT, SFT, GSPO, hf inference, accelerate launch) runs
for real on the CPU and the summary names each with its result."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_gpu_check_runs_every_stage(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    res = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--steps", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    summary = json.loads(out.read_text())
    stages = {s["name"]: s for s in summary["stages"]}
    assert list(stages) == ["cpt", "sft", "gspo", "hf inference", "accelerate launch"]
    assert summary["ok"] and all(s["ok"] for s in stages.values())
    device = "cpu" if not torch.cuda.is_available() else torch.cuda.get_device_name(0)
    assert {s["device"] for s in stages.values()} == {device}
    assert "batched == single" in stages["hf inference"]["detail"]


def test_require_cuda_refuses_without_a_gpu(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    res = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--require-cuda"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 2 and "sees no GPU" in res.stderr
