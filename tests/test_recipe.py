"""The CPU recipe in examples/ runs end to end, as a reader would run it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentworld.launch import free_port

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.sandbox
def test_cpu_recipe_runs_end_to_end(sandbox_tmp: Path) -> None:
    work = sandbox_tmp / "recipe"
    env = {**os.environ, "RECIPE_PORT": str(free_port()), "TMPDIR": str(sandbox_tmp)}
    res = subprocess.run(["bash", str(REPO / "examples" / "cpu_recipe.sh"), str(work)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    trajs = (work / "trajs.jsonl").read_text().splitlines()
    assert len(trajs) == 9 and (work / "bench" / "terminal_test.jsonl").exists()
    assert (work / "ckpt" / "agentworld_train.yaml").exists()
    scores = json.loads((work / "report" / "scores.json").read_text())
    assert "terminal" in json.dumps(scores)
    step = json.loads((work / "sim_step.json").read_text())
    meta = step["observation"]["metadata"]
    # A local backend's answer is forced into the observation block (the output contract);
    # random weights never close it in 32 tokens, so the step fails loudly on the cut-off
    # answer (and ends the episode) instead of showing it as the screen.
    assert meta["turn"] == 1 and meta["prediction_status"] == "truncated"
    assert meta["error"] == "prediction truncated" and step["truncated"]
