"""``agentworld collect terminal`` end to end: real sandboxes, resumable, benchmark samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import read_trajectories

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def test_collect_terminal_records_and_resumes(tmp_path: Path) -> None:
    out, bench = tmp_path / "t.jsonl", tmp_path / "bench"
    args = ["collect", "terminal", "--episodes", "1", "--test-episodes", "2", "--workers", "2", "-o", str(out),
            "--bench-dir", str(bench), "-t", "git-first-commit", "-t", "python-traceback"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "3recorded,0alreadythere,0failed" in _flat(r.output)
    trajs = read_trajectories(out, strict=True).items
    # git-first-commit is a held-out template, python-traceback a training one.
    assert {(t.provenance.split, t.provenance.task) for t in trajs} == {("train", "python-traceback"),
                                                                        ("test", "git-first-commit")}
    assert {t.provenance.split_by for t in trajs} == {"template-v1"}
    assert all(t.provenance.agent == "scripted" and t.initial_state for t in trajs)
    git = next(t for t in trajs if t.provenance.task == "git-first-commit")
    assert "Initialized empty Git repository" in git.turns[1].observation
    assert "Initial commit" in git.turns[-1].observation
    samples = load_bench_dir(bench, strict=True).samples
    assert len(samples) == 2 * 5 and {s.task for s in samples} == {"terminal"}
    assert all(s.system_str and s.trajectory_id.startswith("terminal-test-") for s in samples)

    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0 and "0recorded,3alreadythere" in _flat(r.output)


def test_collect_terminal_unknown_template() -> None:
    r = CliRunner().invoke(app, ["collect", "terminal", "-t", "no-such-task"])
    assert r.exit_code == 2 and "unknownterminaltasktemplate" in _flat(r.output)


def _flat(text: str) -> str:
    """Console output without whitespace (the console wraps long lines anywhere)."""
    return "".join(text.split())
