"""``agentworld predict``: one action from a history file, and the interactive session."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories

runner = CliRunner()


def _store(tmp_path: Path) -> Path:
    traj = Trajectory(
        id="t7",
        domain="terminal",
        turns=[
            Turn(action="pwd", observation="/workspace"),
            Turn(action="echo hi", observation="hi"),
            Turn(action="whoami", observation="root"),
        ],
    )
    path = tmp_path / "trajs.jsonl"
    write_trajectories(path, [traj])
    return path


def test_predict_one_turn_of_a_trajectory(tmp_path: Path) -> None:
    store = _store(tmp_path)
    args = ["predict", "--history", str(store), "--turn", "2", "--backend", "retrieval:" + str(store)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == "hi"
    cache = tmp_path / "c.sqlite"
    res = runner.invoke(app, [*args, "--json", "-n", "2", "--cache", str(cache)])
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["sample_index"] for r in rows] == [0, 1] and rows[0]["observation"] == "hi"
    res = runner.invoke(app, [*args, "--json", "--cache", str(cache), "--cache-mode", "replay"])
    assert res.exit_code == 0 and json.loads(res.stdout)["cached"] is True


def test_predict_a_benchmark_sample(awbench_dir: Path) -> None:
    path = awbench_dir / "terminal_test.jsonl"
    res = runner.invoke(app, ["predict", "--history", str(path), "--id", "tb-0001-t3", "-b", "retrieval:" + str(awbench_dir)])
    assert res.exit_code == 0, res.output
    assert "hi" in res.stdout


def test_clear_errors(tmp_path: Path) -> None:
    store = _store(tmp_path)
    res = runner.invoke(app, ["predict", "--history", str(tmp_path / "none.jsonl"), "--action", "ls", "-b", "retrieval:" + str(store)])
    assert res.exit_code == 2 and "not found" in res.output
    res = runner.invoke(app, ["predict", "--history", str(store), "-b", "retrieval:" + str(store)])
    assert res.exit_code == 2 and "no action" in res.output
    res = runner.invoke(app, ["predict", "--domain", "terminal", "--action", "ls", "-b", "hf"])
    assert res.exit_code == 2 and "needs path" in res.output and "hf:PATH" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "domain": "nowhere", "turns": []}\n')
    res = runner.invoke(app, ["predict", "--history", str(bad), "--action", "ls", "-b", "retrieval:" + str(store)])
    assert res.exit_code == 2 and f"{bad}:1" in res.output


def test_interactive_session_keeps_history_and_saves(tmp_path: Path) -> None:
    store = _store(tmp_path)
    saved = tmp_path / "session.jsonl"
    keys = "\n".join(["echo hi", "whoami", ":undo", "pwd", ":history", ":bogus", f":save {saved}", ":quit"]) + "\n"
    res = runner.invoke(app, ["predict", "-i", "--domain", "terminal", "-b", "retrieval:" + str(store)], input=keys)
    assert res.exit_code == 0, res.output
    assert "dropped the last turn" in res.output and "unknown command" in res.output
    [traj] = read_trajectories(saved).items
    assert [(t.action, t.observation) for t in traj.turns] == [("echo hi", "hi"), ("pwd", "/workspace")]
    assert traj.provenance.source == "sim" and "terminal" in traj.model_extra["system_str"].lower()
