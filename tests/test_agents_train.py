"""Multi-turn GRPO of an agent policy: TRL's environment objects over real and simulated
task episodes, and a few trainer steps on a tiny model (checkpoint, saved config, resume)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_sim_fixtures import terminal_trajectories

from agentworld.agents.tasks import family
from agentworld.agents.train import TerminalEpisode, ToolEpisode, _Runtime, dataset_rows, load_agent_config
from agentworld.envs._owner import OWNER_VAR, start_time
from agentworld.envs.sweep import sweep_now
from agentworld.models import WorldModel, load_backend
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.records.trajectory import write_trajectories


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "terminal.jsonl"
    write_trajectories(path, terminal_trajectories())
    return path


def test_terminal_episode_object_is_rewarded_by_the_sandbox() -> None:
    rt = _Runtime(load_agent_config(None, {"mode": "real"}))
    ep = TerminalEpisode(rt)
    task = family("term-write-file").instance(3)
    [row] = dataset_rows(load_agent_config(None, {"tasks": ["term-write-file"], "seeds": 1, "seed_start": 3}))
    assert (row["family_name"], row["seed"], row["environment"]) == ("term-write-file", 3, "terminal")
    assert row["prompt"][-1] == {"role": "user", "content": task.instruction}
    first = ep.reset(family_name="term-write-file", seed=3)
    assert "root@sandbox" in first
    text = task.solution[0]
    command = json.loads(text)[0]["keystrokes"].rstrip("\n")
    ep.terminal(command)
    assert ep.get_reward() == 1.0
    ep.reset(family_name="term-write-file", seed=3)
    assert ep.get_reward() == 0.0


def test_tool_episode_object_in_the_simulator(mcp_wm: WorldModel) -> None:
    pert = Path(__file__).parents[1] / "configs" / "perturbations" / "flaky-api.yaml"
    rt = _Runtime(load_agent_config(None, {"mode": "sim", "perturbations": str(pert)}), world_model=mcp_wm)
    assert rt.perturbations is not None and rt.perturbations.rules
    ep = ToolEpisode(rt)
    ep.reset(family_name="mcp-mem-entities", seed=0)
    call = json.loads(family("mcp-mem-entities").instance(0).solution[0])
    ep.call_tool(call["name"], json.dumps(call["arguments"]))
    reward = ep.get_reward()  # replayed over what the simulator answered: 1.0 unless it showed an error
    assert 0.0 <= reward <= 1.0
    assert ep.get_reward() == 0.0  # the episode was closed by the first grade


@pytest.mark.slow
def test_grpo_steps_save_and_resume(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, source: Path) -> None:
    from agentworld.agents.train import train_agent

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tiny = build_tiny_checkpoint(tmp_path_factory.getbasetemp() / "agents-tiny")  # shared with test_agents_runner
    wm = WorldModel(load_backend("retrieval", source=source, domain="terminal"))
    base = {"model": str(tiny), "tasks": ["term-write-file"], "seeds": 2, "mode": "sim", "output_dir": str(tmp_path / "out"),
            "max_completion_length": 16, "max_tool_calling_iterations": 2, "num_generations": 2,
            "per_device_train_batch_size": 2, "save_steps": 1, "lora": True, "lora_target_modules": ["q_proj", "v_proj"],
            "precision": "fp32"}
    first = train_agent(load_agent_config(None, {**base, "max_steps": 1}), world_model=wm)
    assert first.global_step == 1 and first.resumed_from is None
    saved = yaml.safe_load((tmp_path / "out" / "checkpoint-1" / "agentworld_train.yaml").read_text())
    assert saved["trainer"] == "agent" and saved["tasks"] == ["term-write-file"] and saved["mode"] == "sim"
    again = train_agent(load_agent_config(None, {**base, "max_steps": 2}), world_model=wm)
    assert again.global_step == 2 and again.resumed_from and again.resumed_from.endswith("checkpoint-1")
    assert (tmp_path / "out" / "adapter_model.safetensors").exists()


def _tagged(token: str) -> list[int]:
    """Processes whose launcher carries the owner tag of ``token`` (sandboxes of that run)."""
    needle = f"{OWNER_VAR}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.slow
def test_sigterm_closes_the_real_episodes_of_agent_train(tmp_path: Path, sandbox_tmp: Path,
                                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """SIGTERM (as a job scheduler or `kill` sends) unwinds like Ctrl-C: the run's sandboxes
    are closed, none is left for a later sweep. Without the handler the folder stays mounted."""
    tiny = build_tiny_checkpoint(tmp_path_factory.getbasetemp() / "agents-tiny")
    argv = [sys.executable, "-m", "agentworld", "agent", "train", "--model", str(tiny), "--mode", "real",
            "-t", "term-write-file", "-o", str(tmp_path / "out"), "--max-steps", "50",
            "--set", "seeds=2", "--set", "num_generations=2", "--set", "per_device_train_batch_size=2",
            "--set", "max_completion_length=8", "--set", "max_tool_calling_iterations=1", "--set", "precision=fp32",
            "--set", "save_steps=1000", "--set", 'lora_target_modules=["q_proj"]']
    env = {**os.environ, "TMPDIR": str(sandbox_tmp), "TRL_EXPERIMENTAL_SILENCE": "1"}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        token = None
        for _ in range(1200):  # <= 120 s for the model to load and a step to open its sandboxes
            if proc.poll() is not None:
                pytest.fail(f"agent train ended before any episode opened: {proc.stderr.read().decode()[-2000:]}")
            token = token or f"{proc.pid}:{start_time(proc.pid)}"
            if _tagged(token):
                break
            time.sleep(0.1)
        else:
            pytest.fail("no sandbox of the run appeared within 120 s")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        assert rc != 0
        assert _tagged(token) == []
        assert not list(sandbox_tmp.glob("aw-sandbox-*")), err[-2000:]  # tmpfs, mounts, tmux socket folder removed
        assert "open episode(s)" in err, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sweep_now(sandbox_tmp)  # a failed run's sandboxes (their owner is gone by now)
