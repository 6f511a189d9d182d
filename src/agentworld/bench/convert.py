"""Trajectories into AgentWorldBench samples: the benchmark a recorded set evaluates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.jsonl import LineError, Loaded
from agentworld.records.bench import write_bench_dir
from agentworld.records.select import TurnPolicy, trajectories_to_samples
from agentworld.records.trajectory import Trajectory, read_trajectories


def read_trajectory_files(paths: Sequence[Path], *, strict: bool = False) -> Loaded[Trajectory]:
    """The trajectories of every file in ``paths``, with the bad lines skipped (reported in
    ``errors``), or with ``strict`` a :class:`~agentworld.jsonl.JsonlError` at the first."""
    loaded: Loaded[Trajectory] = Loaded()
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"no such file: {p}")
        part = read_trajectories(p, strict=strict)
        loaded.items += part.items
        loaded.lines += part.lines
        loaded.errors += part.errors
    return loaded


@dataclass
class Converted:
    out_dir: Path
    trajectories: int
    """Valid trajectories read; none means nothing was written."""
    samples: dict[str, int] = field(default_factory=dict)
    """Samples written per domain, to ``out_dir/<domain>_test.jsonl``."""
    errors: list[LineError] = field(default_factory=list)
    fmt: str = "jsonl"
    """jsonl, parquet or both (agentworld.data.parquet)."""

    def path(self, domain: str) -> Path:
        return self.out_dir / f"{domain}_test.jsonl"

    def files(self, domain: str) -> list[Path]:
        """The files written for ``domain``: JSONL and/or Parquet."""
        jsonl, parquet = self.path(domain), self.out_dir / f"{domain}_test.parquet"
        return {"jsonl": [jsonl], "parquet": [parquet], "both": [jsonl, parquet]}[self.fmt]


def convert_trajectories(
    paths: Sequence[Path], out_dir: Path, *, policy: TurnPolicy = TurnPolicy.spread, fraction: float | None = None,
    seed: int = 0, strict: bool = False, fmt: str = "jsonl",
) -> Converted:
    """Turn the trajectories in ``paths`` into benchmark samples (the turns ``policy``
    picks, a seeded ``fraction`` of them if given), one file per domain under ``out_dir``:
    ``<domain>_test.jsonl`` and/or, with ``fmt`` parquet or both, ``<domain>_test.parquet``."""
    loaded = read_trajectory_files(paths, strict=strict)
    result = Converted(out_dir=out_dir, trajectories=len(loaded.items), errors=loaded.errors, fmt=fmt)
    if loaded.items:
        samples = list(trajectories_to_samples(loaded.items, policy=policy, fraction=fraction, seed=seed))
        result.samples = write_bench_dir(out_dir, samples)
        if fmt != "jsonl":
            from agentworld.data.parquet import jsonl_to_parquet

            for domain in result.samples:
                jsonl_to_parquet(result.path(domain))
                if fmt == "parquet":
                    result.path(domain).unlink()
    return result
