"""The common first steps of every builder: load, filter, split, check leakage.

The split is written next to the dataset (``split.json``) so the held-out trajectories
can be evaluated later and audited against the training set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.data.config import CommonConfig
from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectories
from agentworld.data.split import LeakageReport, check_leakage, split_trajectories
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

    def summary(self) -> dict:
        return {
            "train_trajectories": len(self.train),
            "test_trajectories": len(self.test),
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


def prepare(config: CommonConfig, out_dir: Path | None = None) -> Prepared:
    """Load, filter and split; raises LeakageError when the split leaks."""
    trajs, errors = load_inputs(config.inputs, config.domains)
    report = FilterReport()
    kept = list(filter_trajectories(trajs, FilterConfig(min_turns=config.min_turns), report))
    split = split_trajectories(kept, test_fraction=config.test_fraction, seed=config.seed)
    leakage = check_leakage(split.train, split.test)
    if not leakage.ok:
        raise LeakageError(
            f"{len(leakage.shared_ids)} trajectory id(s) and {len(leakage.near_duplicates)} near-duplicate(s) "
            "on both sides of the split"
        )
    out = Prepared(split.train, split.test, report, leakage, errors)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        split_record = {"train": [t.id for t in split.train], "test": [t.id for t in split.test]}
        (out_dir / "split.json").write_text(json.dumps(split_record, indent=1), encoding="utf-8")
        if split.test:
            write_jsonl(out_dir / "test_trajectories.jsonl", split.test)
    return out
