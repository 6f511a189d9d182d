"""Trajectories to AgentWorldBench samples, called directly (``agentworld data convert``'s library side)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sim_fixtures import mcp_trajectories, terminal_trajectories

from agentworld.bench.convert import convert_trajectories, read_trajectory_files
from agentworld.jsonl import JsonlError
from agentworld.records.bench import load_bench_dir
from agentworld.records.select import TurnPolicy
from agentworld.records.trajectory import write_trajectories


def _files(tmp_path: Path) -> tuple[Path, Path]:
    term, mcp = tmp_path / "t.jsonl", tmp_path / "m.jsonl"
    write_trajectories(term, terminal_trajectories())
    write_trajectories(mcp, mcp_trajectories())
    with mcp.open("a") as fh:
        fh.write("{torn\n")
    return term, mcp


def test_convert_writes_one_file_per_domain_and_reports_bad_lines(tmp_path: Path):
    term, mcp = _files(tmp_path)
    res = convert_trajectories([term, mcp], tmp_path / "bench", policy=TurnPolicy.all)
    assert res.trajectories == len(terminal_trajectories()) + len(mcp_trajectories())
    assert len(res.errors) == 1 and res.errors[0].line == len(mcp_trajectories()) + 1
    assert res.samples["terminal"] == sum(len(t.turns) for t in terminal_trajectories())
    loaded = load_bench_dir(tmp_path / "bench")
    assert {d: sum(s.domain == d for s in loaded.samples) for d in res.samples} == res.samples
    assert all(res.path(d).exists() for d in res.samples)


def test_nothing_valid_writes_nothing_and_strict_stops(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{torn\n")
    res = convert_trajectories([bad], tmp_path / "bench")
    assert res.trajectories == 0 and res.samples == {} and not (tmp_path / "bench").exists()
    _, mcp = _files(tmp_path)
    with pytest.raises(JsonlError):
        convert_trajectories([mcp], tmp_path / "bench", strict=True)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_trajectory_files([mcp, tmp_path / "nope.jsonl"])
    assert len(read_trajectory_files([mcp, mcp]).items) == 2 * len(mcp_trajectories())
