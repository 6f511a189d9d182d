"""Judge stored predictions with one or more scorers into an append-only, resumable JSONL.

Each line is one verdict keyed by (sample uid, sampling index, judge name) and carries
what the score and report steps need -- the action, the parsed prediction, the real
observation, token counts and the world model's run settings -- so they run from this
file alone. A prediction with nothing to judge (a failed call, no answer) gets a verdict
that says so (:func:`agentworld.judge.llm.left_out`); scores count it apart. Re-judging reads
existing predictions and never calls the world model again; a killed run resumes
without redoing or duplicating verdicts. Each verdict records its judge's settings
(model, sampling, prompt version) so resuming with other settings is refused, and an
advisory lock keeps a second run off a file that one is writing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.bench.infer import check_settings
from agentworld.jsonl import JsonlAppender, LineError, read_jsonl, repair_tail, run_lock, write_jsonl
from agentworld.judge.base import Scorer
from agentworld.judge.llm import LEFT_OUT, left_out
from agentworld.models.bounded import as_completed_bounded
from agentworld.models.cache import CacheMiss
from agentworld.records.bench import BenchSample
from agentworld.records.prediction import Prediction, PredictionRecord
from agentworld.records.verdict import JudgedKey, JudgedRecord, Judgement

RAW_CLIP = 2000


def scorer_settings(scorer: Scorer) -> dict[str, Any] | None:
    """A scorer's settings if it declares any (LLM judges do; the rule scorer has none)."""
    settings = getattr(scorer, "settings", None)
    return dict(settings) if isinstance(settings, dict) else None


def model_name(p: Prediction) -> str:
    """How a world model is named in verdicts and reports: ``backend:model``."""
    return f"{p.backend}:{p.model}" if p.backend else p.model


@dataclass
class LoadedJudgements:
    records: dict[JudgedKey, JudgedRecord]
    """The last record per key (re-judging a failure supersedes it)."""
    errors: list[LineError]


def load_judgements(paths: str | Path | Sequence[str | Path]) -> LoadedJudgements:
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = LoadedJudgements({}, [])
    for path in map(Path, paths):
        if not path.exists():
            continue
        loaded = read_jsonl(path, JudgedRecord)
        out.records.update((r.key, r) for r in loaded.items)
        out.errors.extend(loaded.errors)
    return out


@dataclass
class JudgeProgress:
    total: int
    done: int = 0
    skipped: int = 0
    failed: int = 0
    """Verdicts the judge failed to give (after its retries)."""
    left_out: int = 0
    """Predictions with nothing to judge (failed calls, no answer): not judged, counted apart."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    missing_samples: int = 0
    """Predictions whose sample is not in the benchmark given (not judged)."""


async def run_judging(
    scorers: Sequence[Scorer],
    samples: Sequence[BenchSample],
    predictions: Sequence[PredictionRecord],
    out: str | Path,
    *,
    concurrency: int = 4,
    rejudge: bool = False,
    retry_failed: bool = False,
    overwrite: bool = False,
    on_progress: Callable[[JudgeProgress], None] | None = None,
) -> JudgeProgress:
    """Every scorer judges every prediction whose sample is in ``samples``.

    ``rejudge`` scores again even where a verdict exists (the new line supersedes the
    old); ``retry_failed`` does so only for failed verdicts. A judge whose stored
    verdicts were made with other settings raises
    :class:`agentworld.bench.infer.SettingsMismatch` unless ``overwrite`` empties the
    file first; a file another run is writing raises :class:`agentworld.jsonl.FileBusy`.
    """
    out = Path(out)
    names = [s.name for s in scorers]
    if len(set(names)) < len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"two judges are named {dup!r}; give each its own name so their verdicts stay apart")
    with run_lock(out):
        if overwrite and out.exists():
            write_jsonl(out, [])
        repair_tail(out)
        existing = load_judgements(out).records
        settings = {s.name: scorer_settings(s) for s in scorers}
        for name, current in settings.items():
            if current is not None:
                stored = (r.judge_settings for r in existing.values() if r.judge == name)
                check_settings(out, stored, current, f"verdicts of judge {name!r}")
        return await _judge_locked(
            scorers, samples, predictions, out, existing, settings, concurrency, rejudge, retry_failed, on_progress
        )


Job = tuple[Scorer, BenchSample, PredictionRecord]


async def _judge_locked(
    scorers: Sequence[Scorer],
    samples: Sequence[BenchSample],
    predictions: Sequence[PredictionRecord],
    out: Path,
    existing: dict[JudgedKey, JudgedRecord],
    settings: dict[str, dict[str, Any] | None],
    concurrency: int,
    rejudge: bool,
    retry_failed: bool,
    on_progress: Callable[[JudgeProgress], None] | None,
) -> JudgeProgress:
    jobs, missing = _plan_jobs(scorers, samples, predictions, existing, rejudge, retry_failed)
    progress = JudgeProgress(total=len(predictions) * len(scorers) - missing * len(scorers), missing_samples=missing)
    progress.skipped = progress.total - len(jobs)
    if on_progress:
        on_progress(progress)
    if not jobs:
        return progress
    sem = asyncio.Semaphore(concurrency)

    async def one(job: Job) -> JudgedRecord:
        async with sem:
            return await _judge_one(job, settings)

    # Tasks are created in bounded batches so a large run holds few pending coroutines.
    verdicts = as_completed_bounded((one(job) for job in jobs), concurrency * 2)
    with JsonlAppender(out) as appender:
        async with aclosing(verdicts):
            async for record in verdicts:
                appender.append(record)
                _tally(progress, record)
                if on_progress:
                    on_progress(progress)
    return progress


def _plan_jobs(
    scorers: Sequence[Scorer],
    samples: Sequence[BenchSample],
    predictions: Sequence[PredictionRecord],
    existing: dict[JudgedKey, JudgedRecord],
    rejudge: bool,
    retry_failed: bool,
) -> tuple[list[Job], int]:
    """The (scorer, sample, prediction) triples still to judge, and how many predictions
    have no sample in the benchmark given (those are not judged). A verdict that left its
    prediction out is redone once the prediction has an answer (a retried call)."""
    by_uid = {s.uid: s for s in samples}
    jobs: list[Job] = []
    missing = 0
    for rec in predictions:
        sample = by_uid.get(rec.uid)
        if sample is None:
            missing += 1
            continue
        for scorer in scorers:
            old = existing.get((rec.uid, rec.sample_index, scorer.name, model_name(rec.prediction)))
            if old is None or rejudge or (retry_failed and not old.judgement.ok) or _answered_since(old, rec.prediction):
                jobs.append((scorer, sample, rec))
    return jobs, missing


def _answered_since(old: JudgedRecord, p: Prediction) -> bool:
    """Whether a verdict left its prediction out and the stored prediction now has an answer."""
    was_left_out = left_out(old.prediction_error, old.prediction_status, old.observation) is not None
    return was_left_out and left_out(p.error, p.status, p.observation) is None


async def _judge_one(job: Job, settings: dict[str, dict[str, Any] | None]) -> JudgedRecord:
    """One verdict, self-contained: a scorer that raises yields a failed verdict."""
    scorer, sample, rec = job
    try:
        j = await scorer.score(sample, rec.prediction)
    except (asyncio.CancelledError, KeyboardInterrupt, CacheMiss):
        raise  # a strict-replay miss is a configuration error, not a failed verdict
    except Exception as exc:  # a scorer bug must not stop the run: record and count it
        j = Judgement.failed(scorer.name, f"{type(exc).__name__}: {exc}")
    p = rec.prediction
    return JudgedRecord(
        uid=rec.uid,
        domain=rec.domain,
        id=rec.id,
        turn_idx=rec.turn_idx,
        sample_index=rec.sample_index,
        judge=scorer.name,
        judgement=j,
        model=model_name(p),
        action=sample.action,
        # What was judged: a truncated answer's partial text too; None when left out.
        observation=None if left_out(p.error, p.status, p.observation) else p.observation,
        ground_truth=sample.ground_truth,
        prediction_status=str(p.status),
        raw_text=None if p.ok else p.text[:RAW_CLIP],
        prediction_error=p.error,
        prediction_prompt_tokens=p.prompt_tokens or 0,
        prediction_completion_tokens=p.completion_tokens or 0,
        judge_settings=settings.get(scorer.name),
        prediction_settings=rec.settings,
    )


def _tally(progress: JudgeProgress, record: JudgedRecord) -> None:
    progress.done += 1
    if LEFT_OUT in record.judgement.details or left_out(record.prediction_error, record.prediction_status, record.observation):
        progress.left_out += 1
    else:
        progress.failed += not record.judgement.ok
    progress.prompt_tokens += record.judgement.prompt_tokens
    progress.completion_tokens += record.judgement.completion_tokens
