"""Run a world model over benchmark samples into an append-only, resumable JSONL.

Each line is one prediction, keyed by the sample's uid and the sampling index. A run
reads its output file first and only asks for what is missing, so a run killed at any
point (kill -9 included) resumes without redoing or duplicating finished predictions;
a torn last line is cut before appending resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from agentworld.bench.format import BenchSample
from agentworld.jsonl import JsonlAppender, LineError, read_jsonl, repair_tail
from agentworld.models.base import GenerationConfig, Prediction
from agentworld.models.runner import WorldModel
from agentworld.prompts import sample_messages
from agentworld.seeding import unit_hash

Key = tuple[str, int]


class PredictionRecord(BaseModel):
    """One stored prediction: which sample, which sampling index, what came back."""

    uid: str
    domain: str
    id: int | str
    turn_idx: int
    sample_index: int
    prediction: Prediction
    created_at: float = Field(default_factory=time.time)

    @property
    def key(self) -> Key:
        return (self.uid, self.sample_index)


def select_samples(
    samples: Sequence[BenchSample],
    *,
    domains: Iterable[str] | None = None,
    ids: Iterable[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    limit: int | None = None,
) -> list[BenchSample]:
    """Filter samples, in file order.

    ``ids`` match a sample's ``id`` or its uid (``domain/id/turn``); ``sample`` keeps a
    seeded random ``k`` per domain (the same ``k`` whatever else is in the set, since
    each sample's draw hashes its own uid); ``limit`` then keeps the first ``n`` per
    domain so every domain stays represented.
    """
    wanted_domains = set(domains) if domains else None
    wanted_ids = {str(i) for i in ids} if ids else None
    out = [
        s
        for s in samples
        if (wanted_domains is None or s.domain in wanted_domains)
        and (wanted_ids is None or str(s.id) in wanted_ids or s.uid in wanted_ids)
    ]
    if sample is not None:
        keep: set[str] = set()
        for domain in {s.domain for s in out}:
            ranked = sorted((s for s in out if s.domain == domain), key=lambda s: unit_hash(seed, "sample", s.uid))
            keep |= {s.uid for s in ranked[:sample]}
        out = [s for s in out if s.uid in keep]
    if limit is not None:
        counts: dict[str, int] = {}
        kept = []
        for s in out:
            if counts.get(s.domain, 0) < limit:
                counts[s.domain] = counts.get(s.domain, 0) + 1
                kept.append(s)
        out = kept
    return out


@dataclass
class LoadedPredictions:
    records: dict[Key, PredictionRecord]
    """The last record per key (a retried failure supersedes the failed one)."""
    errors: list[LineError]


def load_predictions(path: str | Path) -> LoadedPredictions:
    path = Path(path)
    if not path.exists():
        return LoadedPredictions({}, [])
    loaded = read_jsonl(path, PredictionRecord)
    return LoadedPredictions({r.key: r for r in loaded.items}, loaded.errors)


@dataclass
class InferProgress:
    """Running totals, handed to the progress callback after every finished sample."""

    total: int
    done: int = 0
    skipped: int = 0
    failures: int = 0
    invalid: int = 0
    untagged: int = 0
    """Answers without the observation block: scored as published, counted apart."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = 0.0

    @property
    def rate(self) -> float:
        """Samples per second in this run (resumed ones excluded)."""
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0


async def run_infer(
    wm: WorldModel,
    samples: Sequence[BenchSample],
    out: str | Path,
    *,
    n: int = 1,
    config: GenerationConfig | None = None,
    retry_failed: bool = False,
    on_progress: Callable[[InferProgress], None] | None = None,
) -> InferProgress:
    """Predict ``n`` observations per sample into ``out``; skip what is already there.

    A prediction whose call failed is stored with ``error`` set and counts as done;
    ``retry_failed`` asks again for those, and the new line supersedes the old one.
    """
    out = Path(out)
    repair_tail(out)
    existing = load_predictions(out).records
    others = {r.prediction.backend for r in existing.values()} - {wm.backend.name, ""}
    if others:
        # Resuming is keyed by sample, not by model: another backend's lines would be
        # taken as this one's and silently skipped.
        raise ValueError(f"{out} holds predictions of backend {sorted(others)[0]!r}, not {wm.backend.name!r}; use another --out")
    cfg = (config or GenerationConfig()).merged(GenerationConfig(n=n))

    def finished(key: Key) -> bool:
        rec = existing.get(key)
        return rec is not None and (not retry_failed or rec.prediction.error is None)

    todo = [s for s in samples if not all(finished((s.uid, i)) for i in range(n))]
    progress = InferProgress(total=len(samples), skipped=len(samples) - len(todo), started=time.perf_counter())
    if on_progress:
        on_progress(progress)
    if not todo:
        return progress
    with JsonlAppender(out) as appender:
        async for idx, preds in wm.map([sample_messages(s) for s in todo], cfg):
            s = todo[idx]
            for p in preds:
                if finished((s.uid, p.sample_index)):
                    continue  # asked again only because a sibling index was missing
                appender.append(
                    PredictionRecord(uid=s.uid, domain=s.domain, id=s.id, turn_idx=s.turn_idx, sample_index=p.sample_index, prediction=p)
                )
                progress.failures += p.error is not None
                progress.invalid += p.error is None and not p.ok
                progress.untagged += p.ok and p.status == "untagged"
                progress.prompt_tokens += p.prompt_tokens or 0
                progress.completion_tokens += p.completion_tokens or 0
            progress.done += 1
            if on_progress:
                on_progress(progress)
    return progress
