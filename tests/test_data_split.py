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
                      turns=[Turn(action='[{"keystrokes": "ls\\n", "duration": 1}]', observation=f"out {tid} {_word(tid)}")])


def _word(tid: str) -> str:
    # Digits are masked when comparing trajectories: a word keeps tr-1 and tr-2 apart.
    return "".join("abcdefghij"[int(c)] for c in tid if c.isdigit()) or "none"


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


def _episode(tid: str, task: str | None, split: str | None, turns: list[tuple[str, str]]) -> Trajectory:
    prov = Provenance(source="real", job_id=tid, split=split, task=task)
    return Trajectory(id=tid, domain="terminal", provenance=prov, turns=[Turn(action=a, observation=o) for a, o in turns])


def _own_turns(name: str, n: int) -> list[tuple[str, str]]:
    return [(f"cat {name}_{w}.txt", f"the {w} file of {name} reads {w} {name}") for w in
            ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"][:n]]


def test_split_drops_training_trajectories_that_copy_held_out_turns(tmp_path: Path) -> None:
    held = _episode("te-copied", "held-template", "test", _own_turns("held", 8))
    clean = _episode("tr-clean", "train-template", "train", _own_turns("clean", 6))
    # half of the held-out episode appended to a training one of another template
    planted = _episode("tr-planted", "train-template", "train", [*_own_turns("host", 6), *_own_turns("held", 4)])
    src = tmp_path / "in.jsonl"
    write_trajectories(src, [held, clean, planted])
    sel = select_split([src], split="train")
    assert [t.id for t in sel.trajectories] == ["tr-clean"]
    assert [(a, b) for a, b, _ in sel.leaked] == [("tr-planted", "te-copied")]
    out = tmp_path / "train.jsonl"
    r = CliRunner().invoke(app, ["data", "split", str(src), "-o", str(out)], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    assert "1 train-split trajectories of 3 read from 1 files (1 on the other side, 1 left out for leaking" in _flat(r.output)
    assert "tr-planted" in r.output and [t.id for t in read_trajectories(out).items] == ["tr-clean"]
    r = CliRunner().invoke(app, ["data", "split", str(src), "-o", str(out), "--keep-leaks"])
    assert r.exit_code == 0 and [t.id for t in read_trajectories(out).items] == ["tr-clean", "tr-planted"]


def test_builder_split_holds_out_whole_templates_and_families() -> None:
    from agentworld.data.split import split_trajectories, template_similarity

    trajs = []
    for k in range(30):
        trajs += [_episode(f"t{k}-{i}", f"tmpl{k}", None, [*_own_turns(f"tmpl{_word(str(k))}", 3),
                                                            (f"echo seed {i}", f"seed {_word(str(i))} done")])
                  for i in range(4)]
    # a template that nearly copies tmpl0 under another name, and a trajectory copying tmpl1's turns
    trajs += [_episode(f"twin-{i}", "twin", None, [*_own_turns("tmpla", 3), (f"echo twin {i}", "twin")]) for i in range(2)]
    trajs.append(_episode("copy", None, None, [*_own_turns("tmplb", 3), ("echo other", "something else entirely")]))
    split = split_trajectories(trajs, test_fraction=0.3, seed=2)
    side = {t.id: "test" for t in split.test} | {t.id: "train" for t in split.train}
    assert {"test", "train"} == set(side.values())
    for k in range(30):
        assert len({side[f"t{k}-{i}"] for i in range(4)}) == 1, k
    assert side["twin-0"] == side["twin-1"] == side["t0-0"]
    assert side["copy"] == side["t1-0"]
    matches = template_similarity([t for t in trajs if t.provenance.task == "tmpl0"],
                                  [t for t in trajs if t.provenance.task == "twin"])
    assert [(m.held_out, m.train) for m in matches] == [("twin", "tmpl0")] and matches[0].jaccard >= 0.5
