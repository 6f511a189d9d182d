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
from agentworld.data.split import (
    SIMILAR_TEMPLATES,
    bench_trajectory_ids,
    check_leakage,
    shingles,
    template_of,
    template_similarity,
)
from agentworld.envs.templates import template_families
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
    # the copy, and another training episode of its template whose turns it shares (three
    # of the template's own error turns: the template is on both sides)
    assert "leakage (allowed)" in res.output and "2 near-duplicate" in res.output
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


# -- shared turns and template families -------------------------------------------------

def _with_turns(traj: Trajectory, turns: list[Turn], suffix: str) -> Trajectory:
    return traj.model_copy(update={"id": traj.id + suffix, "turns": turns})


def _long_test_trajectory(recorded: list[Trajectory], domain: str, min_turns: int = 6) -> Trajectory:
    return next(t for t in recorded if t.domain == domain and t.provenance.split == "test" and len(t.turns) >= min_turns)


@pytest.mark.parametrize("domain", ["terminal", "mcp"])
def test_half_a_held_out_trajectory_copied_into_training_is_a_leak(recorded: list[Trajectory], domain: str) -> None:
    held = _long_test_trajectory(recorded, domain)
    train = [t for t in recorded if t.domain == domain and t.provenance.split == "train"]
    assert check_leakage(train, [held]).ok
    half = held.turns[: len(held.turns) // 2]
    host = train[0]
    for copied in (half, [Turn(action=_shift_digits(t.action), observation=_shift_digits(t.observation)) for t in half]):
        # appended to a training trajectory of another template: verbatim, then with every digit changed
        planted = _with_turns(host, [*host.turns, *copied], "-planted")
        rep = check_leakage([*train, planted], [held])
        assert not rep.ok
        assert [(a, b) for a, b, _, _ in rep.turn_copies] == [(held.id, planted.id)]
        assert (held.id, planted.id) in {(a, b) for a, b, _ in rep.near_duplicates}


def test_a_copied_half_fails_the_build_and_is_dropped_near_a_benchmark(tmp_path: Path, recorded: list[Trajectory]) -> None:
    held = _long_test_trajectory(recorded, "terminal")
    train = [t for t in recorded if t.domain == "terminal" and t.provenance.split == "train"][:12]
    host = train[0]
    planted = _with_turns(host, [*host.turns, *held.turns[: len(held.turns) // 2]], "-planted")
    src = tmp_path / "in"
    src.mkdir()
    write_trajectories(src / "trajs.jsonl", [*train, planted, held])
    args = ["data", "build", "rl", "-i", str(src), "--set", "workers=1"]
    res = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "a")], env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    assert "leakage" in res.output and planted.id in res.output and held.id in res.output
    # when a benchmark evaluates the held-out trajectory, the copy is dropped from training instead
    bench = tmp_path / "bench"
    from agentworld.records.bench import write_bench_dir
    from agentworld.records.select import trajectories_to_samples

    write_bench_dir(bench, list(trajectories_to_samples([held])))
    res = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "b"), "--exclude-bench", str(bench)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    split = json.loads((tmp_path / "b" / "split.json").read_text())
    assert planted.id in split["excluded_near_bench"] and planted.id not in split["train"]


def test_trivial_and_vocabulary_turns_are_not_copies() -> None:
    def t(tid: str, task: str, turns: list[tuple[str, str]], split: str = "train") -> Trajectory:
        from agentworld.records.trajectory import Provenance

        return Trajectory(id=tid, domain="terminal", provenance=Provenance(task=task, split=split),
                          turns=[Turn(action=a, observation=o) for a, o in turns])

    own = [(f"cat file{c}.txt", f"contents of {c} here") for c in "abcdef"]
    trivial = [("", "root@sandbox:/workspace# ls"), ('[{"keystrokes": ""}]', "root@sandbox:/workspace#"),
               ("   ", "anything at all"), ("echo", "$")]
    vocab = [("ls", "notes.txt report.txt"), ("pwd", "/workspace here"), ("whoami", "root user")]
    held = t("held", "t-held", [*trivial, *vocab, *own[:2]], "test")
    train = [t("train", "t-train", [*trivial, *vocab, ("date", "today is a day")]),
             t("other", "t-other", [*vocab, ("id", "uid=0 root")])]
    # four trivial turns, three turns seen under three templates: nothing copied
    assert check_leakage(train, [held]).ok
    # the same three turns under two templates only: a copy
    assert not check_leakage(train[:1], [held]).ok
    # one shared turn is never a leak on its own, even of a short trajectory
    short = t("short", "t-short", [own[0], own[1]], "test")
    assert check_leakage([t("x", "t-x", [own[0], own[2], own[3]])], [short]).ok
    assert not check_leakage([t("x", "t-x", [own[0], own[1], own[3]])], [short]).ok


def test_recorded_data_passes_and_near_copy_templates_are_on_one_side(recorded: list[Trajectory]) -> None:
    import agentworld.envs.os.tasks  # noqa: F401  (registers the os templates and their families)

    os_trajs = [t for t in recorded if t.domain == "os"]
    train = [t for t in os_trajs if t.provenance.split == "train"]
    held = [t for t in os_trajs if t.provenance.split == "test"]
    rep = check_leakage(train, held)
    # held-out close_and_save episodes end on the same empty desktop as a training close_discard one:
    # one shared turn, vocabulary of the desktop, not a leak
    assert rep.ok and rep.shared_turns > 0 and not rep.turn_copies
    assert {m.held_out for m in rep.templates} == {template_of(t) for t in held}
    # os is recorded split by template family: near-copy templates (type_list is declared in
    # save_new_document's family) are held out, or trained on, together, so none is flagged
    # across the sides.
    assert {t.provenance.split_by for t in os_trajs} == {"template-v1+family"}
    side = {template_of(t): t.provenance.split for t in os_trajs}
    assert len({(template_of(t), t.provenance.split) for t in os_trajs}) == len(side)
    family = template_families("os", sorted(side))
    assert family["type_list"] == "save_new_document"
    assert all(side[name] == side[fam] for name, fam in family.items() if fam in side)
    assert rep.similar_templates == []
    # The recordings agree: every template's most alike other template at the flagging
    # level is on its side too ...
    sh = [shingles(t) for t in os_trajs]
    flagged = set()
    for name in side:
        rest = [k for k, t in enumerate(os_trajs) if template_of(t) != name]
        own = [k for k, t in enumerate(os_trajs) if template_of(t) == name]
        [match] = template_similarity([os_trajs[k] for k in rest], [os_trajs[k] for k in own],
                                      [sh[k] for k in rest], [sh[k] for k in own])
        if match.jaccard >= SIMILAR_TEMPLATES:
            flagged.add((name, match.train))
            assert side[name] == side[match.train], match
    assert ("type_list", "save_new_document") in flagged
    # ... and the check still flags the near-copy pair when one of the two is held out alone.
    moved = [t for t in train if template_of(t) == "type_list"]
    split_rep = check_leakage([t for t in train if template_of(t) != "type_list"], [*held, *moved])
    assert [(m.held_out, m.train) for m in split_rep.similar_templates] == [("type_list", "save_new_document")]
