"""``agentworld data split``: one side of a recorded split, minus evaluated trajectories."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data import select_split
from agentworld.jsonl import JsonlAppender
from agentworld.records.bench import write_bench_dir
from agentworld.records.select import trajectories_to_samples
from agentworld.records.trajectory import Provenance, Trajectory, Turn, read_trajectories, write_trajectories


def _traj(tid: str, split: str | None) -> Trajectory:
    prov = Provenance(source="real", job_id=tid, split=split) if split else Provenance(source="real")
    return Trajectory(id=tid, domain="terminal", provenance=prov,
                      turns=[Turn(action='[{"keystrokes": "ls\\n", "duration": 1}]', observation=f"out {tid}")])


@pytest.fixture()
def recorded(tmp_path: Path) -> Path:
    d = tmp_path / "trajectories"
    write_trajectories(d / "a.jsonl", [_traj("tr-1", "train"), _traj("te-1", "test"), _traj("old", None)])
    write_trajectories(d / "b.jsonl", [_traj("tr-2", "train"), _traj("te-2", "test")])
    with JsonlAppender(d / "a.failures.jsonl") as f:  # a failed job: not a trajectory
        f.append({"job_id": "x", "error": "boom"})
    with (d / "b.jsonl").open("a") as f:
        f.write("{not json\n")
    return d


def test_select_split_sides_and_benchmark_exclusion(recorded: Path, tmp_path: Path) -> None:
    train = select_split([recorded], split="train")
    assert [t.id for t in train.trajectories] == ["tr-1", "old", "tr-2"]
    assert train.read == 5 and train.other_split == 2 and [p.name for p in train.files] == ["a.jsonl", "b.jsonl"]
    assert len(train.errors) == 1 and train.errors[0].line == 3
    test = select_split([recorded / "a.jsonl", recorded / "b.jsonl"], split="test")
    assert [t.id for t in test.trajectories] == ["te-1", "te-2"]
    # A benchmark that evaluates tr-2 keeps it out of the training side.
    write_bench_dir(tmp_path / "bench", list(trajectories_to_samples([_traj("tr-2", "train")])))
    kept = select_split([recorded], split="train", exclude_bench=tmp_path / "bench")
    assert [t.id for t in kept.trajectories] == ["tr-1", "old"] and kept.in_bench == 1
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        select_split([recorded], split="dev")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_cli_writes_the_side_and_prints_counts(recorded: Path, tmp_path: Path) -> None:
    write_bench_dir(tmp_path / "bench", list(trajectories_to_samples([_traj("tr-1", "train")])))
    out = tmp_path / "out" / "train.jsonl"
    r = CliRunner().invoke(app, ["data", "split", str(recorded), "--split", "train",
                                 "--exclude-bench", str(tmp_path / "bench"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = _flat(r.output)
    assert "2 train-split trajectories of 5 read from 2 files (2 on the other side, 1 evaluated by" in text
    assert "b.jsonl:3:invalidJSON" in re.sub(r"\s", "", r.output)  # the bad line, with file and line
    assert [t.id for t in read_trajectories(out, strict=True).items] == ["old", "tr-2"]


def test_cli_errors_are_messages(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["data", "split", str(tmp_path / "nope"), "-o", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and "no such file or directory" in _flat(r.output) and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["data", "split", str(tmp_path), "--exclude-bench", str(tmp_path / "none"),
                                 "-o", str(tmp_path / "x.jsonl")])
    assert r.exit_code == 2 and "no such benchmark directory" in _flat(r.output)
