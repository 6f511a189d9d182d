"""Run a world model over benchmark samples into an append-only, resumable JSONL.

Each line is one prediction, keyed by the sample's uid and the sampling index. A run
reads its output file first and only asks for what is missing, so a run killed at any
point (kill -9 included) resumes without redoing or duplicating finished predictions;
a torn last line is cut before appending resumes.

Every line also records the run's settings (backend, model id, resolved generation
settings), so a resume with other settings is refused instead of mixing two runs in one
file, and an advisory lock keeps a second run off a file that one is writing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.jsonl import JsonlAppender, LineError, read_jsonl, repair_tail, run_lock, write_jsonl
from agentworld.models.base import GenerationConfig
from agentworld.models.runner import WorldModel
from agentworld.records.bench import BenchSample
from agentworld.records.prediction import Key, PredictionRecord
from agentworld.seeding import unit_hash

PUBLISHED_DEFAULTS = GenerationConfig(temperature=0.6, max_tokens=32768)
"""Generation settings of the published AgentWorldBench inference (served models)."""


class SettingsMismatch(ValueError):
    """An output file was written by a run with other settings than this one."""


def settings_diff(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``name: <stored> in the file, <current> now`` for every setting that differs."""
    keys = sorted(stored.keys() | current.keys())
    return [f"{k}: {stored.get(k)!r} in the file, {current.get(k)!r} now" for k in keys if stored.get(k) != current.get(k)]


def check_settings(path: Path, stored: Iterable[Mapping[str, Any] | None], current: Mapping[str, Any], what: str) -> None:
    """Raise :class:`SettingsMismatch` naming what differs if any stored settings do."""
    for old in stored:
        if old is not None and (diff := settings_diff(old, current)):
            raise SettingsMismatch(
                f"{path} holds {what} made with other settings ({'; '.join(diff)}). Write to a new --out "
                "file, or pass --overwrite to start this file afresh"
            )


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
    """Tokens spent by live calls in this run."""
    cached: int = 0
    """Predictions answered from the response cache (their tokens were spent before)."""
    cached_tokens: int = 0
    started: float = 0.0

    @property
    def rate(self) -> float:
        """Samples per second in this run (resumed ones excluded)."""
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0


def run_settings(wm: WorldModel, config: GenerationConfig) -> dict[str, Any]:
    """What makes predictions comparable: backend, model id, resolved settings but ``n``
    (more samples per prompt extend a run, they do not change it)."""
    settings = wm.settings(config).to_dict()
    settings.pop("n", None)
    # Demonstrations change every prompt: a run with them is another run. Absent when
    # off, so files written before demos existed still resume.
    demos = wm.demos.cache_tag if wm.demos is not None and wm.demos.settings.k else {}
    return {"backend": wm.backend.name, "model": wm.model_id, **settings, **demos}


async def run_infer(
    wm: WorldModel,
    samples: Sequence[BenchSample],
    out: str | Path,
    *,
    n: int = 1,
    config: GenerationConfig | None = None,
    retry_failed: bool = False,
    overwrite: bool = False,
    on_progress: Callable[[InferProgress], None] | None = None,
) -> InferProgress:
    """Predict ``n`` observations per sample into ``out``; skip what is already there.

    A prediction whose call failed is stored with ``error`` set and counts as done;
    ``retry_failed`` asks again for those, and the new line supersedes the old one.
    A file written with other settings raises :class:`SettingsMismatch` unless
    ``overwrite`` empties it first; a file another run is writing raises
    :class:`agentworld.jsonl.FileBusy`.
    """
    out = Path(out)
    with run_lock(out):
        return await _run_infer_locked(wm, samples, out, n, config, retry_failed, overwrite, on_progress)


async def _run_infer_locked(
    wm: WorldModel,
    samples: Sequence[BenchSample],
    out: Path,
    n: int,
    config: GenerationConfig | None,
    retry_failed: bool,
    overwrite: bool,
    on_progress: Callable[[InferProgress], None] | None,
) -> InferProgress:
    if overwrite and out.exists():
        write_jsonl(out, [])
    repair_tail(out)
    existing = load_predictions(out).records
    others = {r.prediction.backend for r in existing.values()} - {wm.backend.name, ""}
    if others:
        # Resuming is keyed by sample, not by model: another backend's lines would be
        # taken as this one's and silently skipped.
        raise SettingsMismatch(
            f"{out} holds predictions of backend {sorted(others)[0]!r}, not {wm.backend.name!r}; "
            "write to a new --out file, or pass --overwrite to start this file afresh"
        )
    cfg = (config or GenerationConfig()).merged(GenerationConfig(n=n))
    settings = run_settings(wm, cfg)
    check_settings(out, (r.settings for r in existing.values()), settings, "predictions")

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
        # Each sample in its own domain: the backend and the demonstrations need it.
        async for idx, preds in wm.map_samples(todo, cfg):
            s = todo[idx]
            for p in preds:
                if finished((s.uid, p.sample_index)):
                    continue  # asked again only because a sibling index was missing
                appender.append(
                    PredictionRecord(
                        uid=s.uid, domain=s.domain, id=s.id, turn_idx=s.turn_idx, sample_index=p.sample_index,
                        prediction=p, settings=settings,
                    )
                )
                progress.failures += p.error is not None
                progress.invalid += p.error is None and not p.ok
                progress.untagged += p.ok and p.status == "untagged"
                tokens = (p.prompt_tokens or 0) + (p.completion_tokens or 0)
                if p.cached:
                    # Stored counts were spent by the run that filled the cache, not this one.
                    progress.cached += 1
                    progress.cached_tokens += tokens
                else:
                    progress.prompt_tokens += p.prompt_tokens or 0
                    progress.completion_tokens += p.completion_tokens or 0
            progress.done += 1
            if on_progress:
                on_progress(progress)
    return progress
