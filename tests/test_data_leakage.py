"""`data build` never trains on held-out trajectories: the recorded test side, the
trajectories a benchmark evaluates, and near-duplicates of them (real files, real CLI)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from datasets import Dataset
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.split import bench_trajectory_ids, check_leakage
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories

ROOT = Path(__file__).parents[1]
BENCH = ROOT / "benchmarks" / "local"
RECORDED = BENCH / "trajectories"


@pytest.fixture(scope="module")
def recorded() -> list[Trajectory]:
    """Every recorded trajectory, read once for the module (the tests only read them)."""
    return [t for f in sorted(RECORDED.glob("*.jsonl")) for t in read_trajectories(f).items]


@pytest.fixture(scope="module")
def evaluated() -> set[str]:
    return bench_trajectory_ids([BENCH])


def _shift_digits(text: str) -> str:
    return re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), text)


def _planted_copy(traj: Trajectory) -> Trajectory:
    """A held-out (test-side) copy of a training trajectory with every digit changed."""
    turns = [Turn(action=_shift_digits(t.action), observation=_shift_digits(t.observation)) for t in traj.turns]
    prov = traj.provenance.model_copy(update={"split": "test"})
    return traj.model_copy(update={"id": traj.id + "-copy", "turns": turns, "provenance": prov})


@pytest.mark.slow
def test_build_from_the_local_benchmark_keeps_no_held_out_trajectory(
    tmp_path: Path, recorded: list[Trajectory], evaluated: set[str]
) -> None:
    out = tmp_path / "rl"
    res = CliRunner().invoke(app, ["data", "build", "rl", "-i", str(RECORDED), "-o", str(out),
                                   "--exclude-bench", str(BENCH), "--set", "workers=1"])
    assert res.exit_code == 0, res.output
    trajs = recorded
    test_side = {t.id for t in trajs if t.provenance.split == "test"}
    assert test_side and evaluated
    split = json.loads((out / "split.json").read_text())
    trained = set(split["train"])
    assert trained and not trained & (test_side | evaluated)
    assert set(split["held_out"]) == test_side | evaluated
    # near-copies of evaluated episodes are dropped too, and counted (the local benchmark
    # holds out whole templates, so it may have none: the planted test below covers them)
    assert not trained & set(split["excluded_near_bench"])
    assert {r["trajectory_id"] for r in Dataset.from_parquet(str(out / "train.parquet"))} <= trained
    report = json.loads((out / "report.json").read_text())
    excluded = len(split["held_out"]) + len(split["excluded_near_bench"])
    assert report["report"]["prepared"]["excluded_trajectories"] == excluded
    assert f"leakage: ok ({len(split['held_out'])} held out, {excluded} excluded from training)" in res.output
    # what is left has no near-duplicate of anything held out
    kept = [t for t in trajs if t.id in trained]
    held = [t for t in trajs if t.id in test_side | evaluated]
    assert check_leakage(kept, held).ok


def test_planted_near_duplicate_fails_the_build_unless_allowed(tmp_path: Path, recorded: list[Trajectory]) -> None:
    trajs = [t for t in recorded if t.provenance.split != "test" and t.domain == "search"][:6]
    original = trajs[0]
    copy = _planted_copy(original)
    assert copy.turns != original.turns
    src = tmp_path / "in"
    src.mkdir()
    write_trajectories(src / "trajs.jsonl", [*trajs, copy])
    runner = CliRunner()
    args = ["data", "build", "rl", "-i", str(src), "--set", "workers=1"]
    res = runner.invoke(app, [*args, "-o", str(tmp_path / "a")])
    assert res.exit_code == 2, res.output
    assert "leakage" in res.output and copy.id in res.output and original.id in res.output
    assert "Traceback" not in res.output and not (tmp_path / "a" / "train.parquet").exists()

    res = runner.invoke(app, [*args, "-o", str(tmp_path / "b"), "--allow-leakage"])
    assert res.exit_code == 0, res.output
    assert "leakage (allowed)" in res.output and "1 near-duplicate" in res.output
    split = json.loads((tmp_path / "b" / "split.json").read_text())
    assert copy.id in split["held_out"] and copy.id not in split["train"]

    # without the copy the same inputs are clean, and the CLI says so
    write_trajectories(src / "trajs.jsonl", trajs)
    res = runner.invoke(app, [*args, "-o", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "leakage: ok (0 held out, 0 excluded from training)" in res.output


def test_allow_leakage_and_exclude_bench_from_the_config(
    tmp_path: Path, recorded: list[Trajectory], evaluated: set[str]
) -> None:
    # A few search trajectories the benchmark evaluates and a few it does not: whether the
    # config's exclude_bench is read shows on those; hundreds more would show it again.
    search = [t for t in recorded if t.domain == "search"]
    trajs = [t for t in search if t.id in evaluated][:4] + [t for t in search if t.id not in evaluated][:8]
    assert {t.id for t in trajs} & evaluated
    src = tmp_path / "in"
    src.mkdir()
    write_trajectories(src / "trajs.jsonl", trajs)
    cfg = tmp_path / "rl.yaml"
    cfg.write_text(f"inputs: [{src}]\noutput_dir: {tmp_path / 'out'}\nworkers: 1\nexclude_bench: [{BENCH}]\n")
    res = CliRunner().invoke(app, ["data", "build", "rl", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    split = json.loads((tmp_path / "out" / "split.json").read_text())
    assert split["train"] and not set(split["train"]) & evaluated
    assert {t.id for t in trajs} & evaluated <= set(split["held_out"])
    cfg.write_text(f"inputs: [{src}]\nexclude_bench: [{tmp_path / 'nope'}]\n")
    res = CliRunner().invoke(app, ["data", "build", "rl", "--config", str(cfg)])
    assert res.exit_code == 2 and "no such benchmark directory" in res.output


def test_bench_ids_fall_back_to_the_sample_id_prefix(tmp_path: Path) -> None:
    line = json.loads((BENCH / "search_test.jsonl").read_text().splitlines()[0])
    tid = line.pop("trajectory_id")
    line["id"] = f"{tid}:3"
    (tmp_path / "search_test.jsonl").write_text(json.dumps(line) + "\n")
    assert bench_trajectory_ids([tmp_path]) == {tid}
