"""The common first steps of every builder: load, hold out, filter, split, check leakage.

Held out before anything else: trajectories recorded on the test side
(``Provenance.split``) and those a benchmark of ``exclude_bench`` evaluates; training
trajectories that near-duplicate a benchmark-evaluated one are dropped too. The leakage
check then compares training against everything held out and fails the build unless
``allow_leakage``. The split is written next to the dataset (``split.json``) so the
held-out trajectories can be evaluated later and audited against the training set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.data.config import CommonConfig
from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectories
from agentworld.data.split import LeakageReport, bench_trajectories, check_leakage, split_trajectories
from agentworld.domains import domain_of_task
from agentworld.jsonl import LineError, write_jsonl
from agentworld.records.trajectory import Trajectory, read_trajectories

_NOT_TRAJECTORIES = ("_test.jsonl", ".failures.jsonl")


class LeakageError(RuntimeError):
    """The held-out split shares trajectories or near-duplicates with the training split."""


def input_files(paths: list[str]) -> list[Path]:
    """Expand files and directories: ``*.jsonl`` inside, except benchmark files
    (``*_test.jsonl``) and the failure records collection runs keep (``*.failures.jsonl``)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(x for x in p.rglob("*.jsonl") if not x.name.endswith(_NOT_TRAJECTORIES))
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: {p}")
    if not files:
        raise FileNotFoundError(f"no trajectory files in {', '.join(paths) or '(no inputs)'}")
    return files


def load_inputs(paths: list[str], domains: list[str] | None = None) -> tuple[list[Trajectory], list[LineError]]:
    wanted = {domain_of_task(d) for d in domains or []}
    trajs: list[Trajectory] = []
    errors: list[LineError] = []
    for f in input_files(paths):
        loaded = read_trajectories(f)
        errors += loaded.errors
        trajs += [t for t in loaded.items if not wanted or t.domain in wanted]
    return trajs, errors


@dataclass
class Prepared:
    train: list[Trajectory]
    test: list[Trajectory]
    filters: FilterReport
    leakage: LeakageReport
    errors: list[LineError] = field(default_factory=list)
    held_out: list[Trajectory] = field(default_factory=list)
    """Recorded on the test side or evaluated by a benchmark: never trained on."""
    near_bench: list[str] = field(default_factory=list)
    """Ids dropped from training as near-duplicates of benchmark-evaluated trajectories."""

    @property
    def excluded(self) -> int:
        return len(self.held_out) + len(self.near_bench)

    def summary(self) -> dict:
        return {
            "train_trajectories": len(self.train),
            "test_trajectories": len(self.test),
            "held_out_trajectories": len(self.held_out),
            "excluded_trajectories": self.excluded,
            "excluded_near_bench": self.near_bench[:50],
            "bad_lines": [str(e) for e in self.errors[:50]],
            "filters": self.filters.to_dict(),
            "leakage": {
                "ok": self.leakage.ok,
                "shared_ids": self.leakage.shared_ids,
                "near_duplicates": self.leakage.near_duplicates[:50],
                "shared_turns": self.leakage.shared_turns,
                "test_turns": self.leakage.test_turns,
            },
        }


def leakage_message(leakage: LeakageReport) -> str:
    """What leaked, with a few examples."""
    parts = []
    if leakage.shared_ids:
        parts.append(f"{len(leakage.shared_ids)} held-out trajectory id(s) also in training "
                     f"(e.g. {', '.join(leakage.shared_ids[:3])})")
    if leakage.near_duplicates:
        examples = ", ".join(f"{a} ~ {b} ({j:.2f})" for a, b, j in leakage.near_duplicates[:3])
        parts.append(f"{len(leakage.near_duplicates)} held-out trajectory(s) with a near-duplicate in training "
                     f"(held out ~ train: {examples})")
    return "; ".join(parts)


def prepare(config: CommonConfig, out_dir: Path | None = None) -> Prepared:
    """Hold out, filter and split; raises LeakageError when training leaks held-out data
    (unless ``config.allow_leakage``)."""
    trajs, errors = load_inputs(config.inputs, config.domains)
    bench = bench_trajectories(config.exclude_bench)
    bench_ids = set(bench)
    held_out = [t for t in trajs if t.provenance.split == "test" or t.id in bench_ids]
    pool = [t for t in trajs if not (t.provenance.split == "test" or t.id in bench_ids)]
    # A near-copy of an evaluated episode would teach the model the benchmark's answers:
    # drop it from training rather than fail, since the benchmark asked for it.
    # The samples' own turns count too: the evaluated trajectory need not be an input.
    evaluated = [t for t in held_out if t.id in bench_ids] + list(bench.values())
    near = {train_id for _, train_id, _ in
            check_leakage(pool, evaluated, near_duplicate=config.near_duplicate).near_duplicates}
    pool = [t for t in pool if t.id not in near]
    report = FilterReport()
    kept = list(filter_trajectories(pool, FilterConfig(min_turns=config.min_turns), report))
    split = split_trajectories(kept, test_fraction=config.test_fraction, seed=config.seed)
    leakage = check_leakage(split.train, [*split.test, *held_out, *bench.values()],
                            near_duplicate=config.near_duplicate)
    if not leakage.ok and not config.allow_leakage:
        raise LeakageError(leakage_message(leakage))
    out = Prepared(split.train, split.test, report, leakage, errors, held_out, sorted(near))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        split_record = {"train": [t.id for t in split.train], "test": [t.id for t in split.test],
                        "held_out": [t.id for t in held_out], "excluded_near_bench": sorted(near)}
        (out_dir / "split.json").write_text(json.dumps(split_record, indent=1), encoding="utf-8")
        if split.test:
            write_jsonl(out_dir / "test_trajectories.jsonl", split.test)
    return out
