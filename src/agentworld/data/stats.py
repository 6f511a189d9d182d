"""Looking at datasets before building from them: per-domain sizes of trajectory files and
benchmark directories, the turn-level loss-masking distribution, and the figures of a build
report worth showing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from agentworld.jsonl import LineError
from agentworld.records.trajectory import Trajectory


def estimate_tokens(text: str) -> int:
    """About four characters per token for English text and code with BPE tokenizers; an
    estimate for sizing datasets, not an exact count."""
    return (len(text) + 3) // 4


@dataclass
class DomainSize:
    """One domain's share of a dataset; token counts are estimates (:func:`estimate_tokens`)."""

    items: int = 0
    turns: int = 0
    action_tokens: int = 0
    obs_tokens: int = 0
    system_tokens: int = 0

    @property
    def turns_per_item(self) -> float:
        return self.turns / (self.items or 1)

    def __add__(self, other: DomainSize) -> DomainSize:
        return DomainSize(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


@dataclass
class DatasetStats:
    kind: Literal["samples", "trajectories"]
    per_domain: dict[str, DomainSize] = field(default_factory=dict)
    """Domains in sorted order."""
    errors: list[LineError] = field(default_factory=list)

    @property
    def total(self) -> DomainSize:
        return sum(self.per_domain.values(), DomainSize())


def dataset_stats(path: Path) -> DatasetStats:
    """Per-domain counts, turns and token estimates of a trajectory JSONL file or of a
    benchmark directory (``<domain>_test.jsonl`` samples)."""
    from agentworld.records.bench import load_bench_dir

    rows: dict[str, DomainSize] = defaultdict(DomainSize)
    if path.is_dir():
        bench = load_bench_dir(path)
        for s in bench.samples:
            r = rows[s.domain]
            r.items += 1
            r.turns += s.turn_idx
            r.action_tokens += sum(estimate_tokens(a) for a, _ in s.history()) + estimate_tokens(s.action)
            r.obs_tokens += sum(estimate_tokens(o) for _, o in s.history()) + estimate_tokens(s.ground_truth)
            r.system_tokens += estimate_tokens(s.system_str)
        return DatasetStats("samples", dict(sorted(rows.items())), bench.errors)
    if not path.exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    from agentworld.data.source import load_inputs

    trajs, errors = load_inputs([str(path)])
    for t in trajs:
        r = rows[t.domain]
        r.items += 1
        r.turns += len(t.turns)
        r.action_tokens += sum(estimate_tokens(x.action) for x in t.turns)
        r.obs_tokens += sum(estimate_tokens(x.observation) for x in t.turns)
        r.system_tokens += estimate_tokens(" ".join(filter(None, [t.task_description, t.initial_state, t.demonstrations])))
    return DatasetStats("trajectories", dict(sorted(rows.items())), errors)


@dataclass
class MaskRow:
    """Turn-level loss masking over one domain: turns per category, turns and observation
    tokens (characters / 4) kept in the loss."""

    turns: int = 0
    categories: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """Turns per :class:`~agentworld.data.masking.Category` name."""
    tokens: int = 0
    kept_turns: int = 0
    kept_tokens: int = 0

    def __add__(self, other: MaskRow) -> MaskRow:
        cats: dict[str, int] = defaultdict(int)
        for c in (self.categories, other.categories):
            for k, v in c.items():
                cats[k] += v
        return MaskRow(self.turns + other.turns, cats, self.tokens + other.tokens,
                       self.kept_turns + other.kept_turns, self.kept_tokens + other.kept_tokens)


@dataclass
class MaskStats:
    turns: int
    per_domain: dict[str, MaskRow]
    """Domains in sorted order."""

    @property
    def total(self) -> MaskRow:
        return sum(self.per_domain.values(), MaskRow())


def mask_stats(
    trajectories: Sequence[Trajectory], *, seed: int = 0, workers: int = 0,
    on_chunk: Callable[[int], None] | None = None,
) -> MaskStats:
    """Categorise every turn (:func:`~agentworld.data.masking.mask_turns`) and count, per
    domain, the categories and what the loss keeps; ``on_chunk`` gets the turns done."""
    from agentworld.data.filters import loss_skipped
    from agentworld.data.masking import Category, mask_turns, trajectory_turn_keys

    n = sum(len(t.turns) for t in trajectories)
    batch = mask_turns(trajectory_turn_keys(trajectories), seed=seed, workers=workers, total=n, on_chunk=on_chunk)
    rows: dict[str, MaskRow] = defaultdict(MaskRow)
    cats, keep, obs = batch.category.tolist(), batch.keep.tolist(), batch.obs_chars.tolist()
    pos = 0
    for t in trajectories:
        r = rows[t.domain]
        for turn in t.turns:
            tokens = (obs[pos] + 3) // 4
            r.turns += 1
            r.categories[Category(cats[pos]).name] += 1
            r.tokens += tokens
            if keep[pos] and not loss_skipped(turn):
                r.kept_turns += 1
                r.kept_tokens += tokens
            pos += 1
    return MaskStats(n, dict(sorted(rows.items())))


_DROPPED = ("dropped_", "turns_removed_", "turns_loss_skipped")
_METRIC_ORDER = ("trajectories", "queries", "rollouts", "valid", "passed", "kept", "retention", "samples", "with_verifier")


def dropped_counts(filters: dict[str, dict[str, int]]) -> dict[str, int]:
    """What the filters dropped, removed or kept out of the loss, summed over domains
    (``filters``: a :class:`~agentworld.data.filters.FilterReport` as a dict), by key."""
    dropped: dict[str, int] = defaultdict(int)
    for counts in filters.values():
        for k, v in counts.items():
            if k.startswith(_DROPPED):
                dropped[k] += v
    return dict(sorted(dropped.items()))


def report_metrics(per_domain: dict[str, dict[str, Any]]) -> list[str]:
    """The metrics of a build report's per-domain counts, in reading order: the pipeline's
    stages first, then any others alphabetically."""
    present = {k for c in per_domain.values() for k in c}
    return [k for k in _METRIC_ORDER if k in present] + sorted(present - set(_METRIC_ORDER))
