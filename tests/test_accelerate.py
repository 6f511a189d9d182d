"""`agentworld train` under `accelerate launch`: the shipped accelerate configs parse, and
a 2-process CPU (gloo) DDP CPT run trains the tiny model for 2 steps."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from agentworld.data.config import CPTConfig
from agentworld.data.cpt import build_cpt
from agentworld.models.tiny import build_tiny_checkpoint

ROOT = Path(__file__).parents[1]
CONFIGS = ROOT / "configs" / "accelerate"


def test_configs_name_their_strategy() -> None:
    kinds = {p.stem: yaml.safe_load(p.read_text()) for p in CONFIGS.glob("*.yaml")}
    assert {k: v["distributed_type"] for k, v in kinds.items()} == {
        "ddp": "MULTI_GPU", "ddp_cpu": "MULTI_GPU", "fsdp": "FSDP",
        "deepspeed_zero2": "DEEPSPEED", "deepspeed_zero3": "DEEPSPEED",
    }
    assert kinds["ddp_cpu"]["use_cpu"] is True and kinds["ddp_cpu"]["num_processes"] == 2
    assert kinds["deepspeed_zero2"]["deepspeed_config"]["zero_stage"] == 2
    assert kinds["deepspeed_zero3"]["deepspeed_config"]["zero_stage"] == 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_process_cpu_ddp_cpt(tmp_path: Path) -> None:
    tiny = build_tiny_checkpoint(tmp_path / "tiny")
    data = tmp_path / "cpt"
    build_cpt(CPTConfig(inputs=[str(ROOT / "examples" / "trajectories.jsonl")], output_dir=str(data),
                        tokenizer=str(tiny), max_length=2048, workers=1, packing=False))
    out = tmp_path / "out"
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / "ddp_cpu.yaml"),
        "--main_process_ip", "127.0.0.1", "--main_process_port", str(free_port()),
        "-m", "agentworld", "train", "cpt", "--data", str(data), "--model", str(tiny), "--out", str(out),
        "--max-steps", "2", "save_steps=2", "logging_steps=1", "learning_rate=0.01",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    log = res.stdout + res.stderr
    assert res.returncode == 0, log[-4000:]
    assert log.count(f"{out}: 2 steps") == 2  # both ranks finished their 2 steps
    before, after = load_file(str(tiny / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert (out / "checkpoint-2").is_dir()
