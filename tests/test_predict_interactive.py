"""``agentworld predict -i``: a person types actions into a SimEnv (retrieval backend)."""

from __future__ import annotations

import json
from pathlib import Path

from test_sim_fixtures import ServerThread
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.models import WorldModel, load_backend
from agentworld.prompts import build_messages, trajectory_system_prompt
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories
from agentworld.sim import SimEnv
from agentworld.sim.loading import load_start

runner = CliRunner()
HISTORY = [("pwd", "/workspace"), ("echo hi", "hi"), ("whoami", "root")]


def _store(tmp_path: Path) -> tuple[Path, Trajectory]:
    traj = Trajectory(id="t7", domain="terminal", task_description="look around",
                      turns=[Turn(action=a, observation=o) for a, o in HISTORY])
    path = tmp_path / "trajs.jsonl"
    write_trajectories(path, [traj])
    return path, traj


def _session(args: list[str], lines: list[str]):
    return runner.invoke(app, ["predict", "-i", *args], input="\n".join(lines) + "\n")


def test_a_session_from_a_trajectory_undoes_and_saves(tmp_path: Path) -> None:
    store, traj = _store(tmp_path)
    saved = tmp_path / "session.jsonl"
    lines = ["echo hi", ":undo", ":undo", "whoami", ":history", f":save {saved}", ":quit"]
    res = _session(["--history", str(store), "-b", "retrieval:" + str(store)], lines)
    assert res.exit_code == 0, res.output
    assert "3 turns of history" in " ".join(res.output.split())
    # The second :undo would reach into the file's history: refused.
    assert res.output.count("dropped the last turn") == 1 and "nothing to undo" in res.output
    [rec] = read_trajectories(saved).items
    assert [(t.action, t.observation) for t in rec.turns] == [*HISTORY, ("whoami", "root")]
    assert rec.provenance.source == "sim" and rec.provenance.agent == "human"
    assert rec.model_extra["system_str"] == trajectory_system_prompt(traj)
    assert rec.task_description == "look around" and rec.sim_scenario["id"] == "t7"


def test_a_benchmark_sample_answers_its_own_action_first(awbench_dir: Path, tmp_path: Path) -> None:
    path = awbench_dir / "terminal_test.jsonl"
    sample = next(json.loads(line) for line in path.read_text().splitlines() if json.loads(line)["id"] == "tb-0001-t3")
    saved = tmp_path / "s.jsonl"
    res = _session(["--history", str(path), "--id", "tb-0001-t3", "-b", "retrieval:" + str(awbench_dir)],
                   [f":save {saved}", ":quit"])
    assert res.exit_code == 0, res.output
    [rec] = read_trajectories(saved).items
    k = sample["turn_idx"]
    assert [t.action for t in rec.turns] == [*sample["prompt"][: k - 1], sample["current_prompt"]]
    assert rec.model_extra["system_str"] == sample["system_str"]


def test_the_world_model_sees_what_it_saw_before_the_move(tmp_path: Path) -> None:
    # The messages of a SimEnv started from a file equal the file's system prompt, its
    # turns and the action: what predict sent before it drove a SimEnv.
    store, traj = _store(tmp_path)
    start = load_start(store, turn=3)
    env = SimEnv(WorldModel(load_backend("retrieval", source=store, domain="terminal")), start.scenario, use_ledger=False)
    obs, _ = env.reset(options={"history": start.history})
    assert obs == "hi" and start.action == "whoami"
    assert env.messages_for("whoami") == build_messages(trajectory_system_prompt(traj), HISTORY[:2], "whoami")


def test_a_failed_call_is_shown_and_never_joins_the_history(tmp_path: Path) -> None:
    from agentworld.models.serve import create_app
    from agentworld.serving import ServerPolicy

    store, _ = _store(tmp_path)
    saved = tmp_path / "s.jsonl"
    backend = load_backend("retrieval", source=store, domain="terminal")
    # A real model server that wants a token: a wrong key fails at once (401, not retried).
    with ServerThread(create_app(backend, model_name="wm", policy=ServerPolicy(token="s3cret"))) as srv:
        common = ["--domain", "terminal", "-b", f"openai:wm@{srv.url}/v1"]
        res = _session([*common, "--opt", "api_key=wrong"], ["pwd", f":save {saved}", ":quit"])
        assert res.exit_code == 0, res.output
        assert "call failed" in res.output and "Traceback" not in res.output
        assert read_trajectories(saved).items[0].turns == []
        res = _session([*common, "--opt", "api_key=s3cret"], ["pwd", ":undo", ":undo", f":save {saved}", "whoami", f":save {saved}"])
        assert res.exit_code == 0, res.output
        assert "nothing to undo" in res.output
    first, second = read_trajectories(saved).items[1:]
    assert first.turns == [] and [(t.action, t.observation) for t in second.turns] == [("whoami", "root")]
