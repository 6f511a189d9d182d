"""SFT dataset by rejection sampling (docs/design.md#training-pipeline).

Each query is one turn of a training trajectory (chosen by a turn policy) under a
system prompt whose wording variant is drawn per query. A world model produces ``k``
rollouts; a scorer (the offline rule scorer or an LLM judge) compares each with the
real observation; the best rollout whose total reaches the threshold becomes the
target: its reasoning inside ``<think>`` and its observation inside the observation
block. Every query's outcome is logged as soon as it is judged, so a killed run resumes
where it stopped; a query whose every call failed is not logged and is retried.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.data.config import SFTConfig
from agentworld.data.cpt import Progress, write_report
from agentworld.data.parquet import write_dataset
from agentworld.data.resume import ResumeLog
from agentworld.data.source import prepare
from agentworld.models.base import GenerationConfig, Prediction
from agentworld.prompts import NUM_VARIANTS, format_observation, sample_messages, trajectory_system_prompt
from agentworld.records.bench import BenchSample
from agentworld.records.select import make_sample, select_turns
from agentworld.records.trajectory import Trajectory
from agentworld.seeding import keyed_rng


@dataclass(frozen=True)
class Query:
    key: str
    sample: BenchSample
    variant: int
    trajectory_id: str


def make_queries(trajs: list[Trajectory], config: SFTConfig) -> list[Query]:
    """Queries in a stable order; the variant of each is a seeded draw of its own key."""
    out = []
    for traj in trajs:
        for k in select_turns(traj, config.turn_policy, config.seed):
            variant = keyed_rng(config.seed, "variant", traj.id, k).randrange(NUM_VARIANTS)
            system = trajectory_system_prompt(traj, variant=variant)
            out.append(Query(f"{traj.id}:{k}", make_sample(traj, k, system_str=system), variant, traj.id))
            if config.max_queries and len(out) >= config.max_queries:
                return out
    return out


@dataclass
class SFTReport:
    per_domain: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """queries, rollouts, valid (parsed), passed (>= threshold), kept, errors, failed_queries."""
    rows: int = 0
    prepared: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    call_errors: list[str] = field(default_factory=list)
    """Errors of the queries whose every call failed in this run (retried on the next)."""

    def retention(self, domain: str | None = None) -> float:
        rows = [self.per_domain[domain]] if domain else list(self.per_domain.values())
        q = sum(r["queries"] for r in rows)
        return sum(r["kept"] for r in rows) / q if q else 0.0

    def to_dict(self) -> dict[str, Any]:
        per = {d: {**c, "retention": round(self.retention(d), 4)} for d, c in sorted(self.per_domain.items())}
        return {"per_domain": per, "retention": round(self.retention(), 4), "rows": self.rows,
                "prepared": self.prepared, "output": self.output, "call_errors": self.call_errors[:20]}


_ROW_KEYS = ("prompt", "completion", "score", "judge", "trajectory_id", "turn_idx", "variant")


def _target(pred: Prediction) -> str:
    return format_observation(pred.observation or "", pred.reasoning)


async def judge_query(query: Query, wm: Any, scorer: Any, config: SFTConfig) -> dict[str, Any]:
    """Roll out, score and choose; ``{"failed": error}`` when every call failed (not
    logged, so a rerun retries it)."""
    gen = GenerationConfig(n=config.k, temperature=config.temperature, max_tokens=config.max_tokens)
    preds = await wm.predict_sample(query.sample, gen)
    if preds and all(p.error for p in preds):
        return {"failed": preds[0].error}
    judgements = await asyncio.gather(*(scorer.score(query.sample, p) for p in preds))
    candidates = []
    best: int | None = None
    for i, (p, j) in enumerate(zip(preds, judgements, strict=True)):
        passed = (
            p.ok
            and j.ok
            and j.total is not None
            and j.total >= config.threshold
            and (p.reasoning is not None or not config.require_reasoning)
        )
        candidates.append({"total": j.total, "status": str(p.status), "error": p.error, "passed": passed})
        if passed and (best is None or j.total > judgements[best].total):
            best = i
    rec: dict[str, Any] = {"domain": query.sample.domain, "candidates": candidates, "kept": best is not None}
    if best is not None:
        rec.update(
            prompt=sample_messages(query.sample),
            completion=[{"role": "assistant", "content": _target(preds[best])}],
            score=judgements[best].total,
            judge=judgements[best].judge,
            trajectory_id=query.trajectory_id,
            turn_idx=query.sample.turn_idx,
            variant=query.variant,
        )
    return rec


async def run_rejection_sampling(
    queries: list[Query], wm: Any, scorer: Any, config: SFTConfig, log: ResumeLog, tick: Progress
) -> list[str]:
    """Judge every query not yet in ``log``, ``config.concurrency`` at a time; returns the
    errors of queries whose every call failed."""
    todo = [q for q in queries if q.key not in log.done]
    tick("rejection sampling", 0, len(queries))
    tick("rejection sampling", len(queries) - len(todo), None)
    sem = asyncio.Semaphore(max(1, config.concurrency))

    async def one(q: Query) -> tuple[Query, dict[str, Any]]:
        async with sem:
            return q, await judge_query(q, wm, scorer, config)

    errors: list[str] = []
    tasks = [asyncio.ensure_future(one(q)) for q in todo]
    try:
        for fut in asyncio.as_completed(tasks):
            q, rec = await fut
            if "failed" in rec:
                errors.append(rec["failed"])
            else:
                log.add(q.key, rec)
            tick("rejection sampling", 1, None)
    finally:
        for t in tasks:
            t.cancel()
    return errors


def default_world_model(config: SFTConfig) -> Any:
    from agentworld.models import WorldModel, load_backend

    return WorldModel(load_backend(config.backend, **config.backend_options), concurrency=config.concurrency)


def default_scorer(config: SFTConfig) -> Any:
    from agentworld.judge import make_scorer

    return make_scorer(config.scorer, config.judge_backend, config.judge_options)


def build_sft(
    config: SFTConfig,
    *,
    world_model: Any = None,
    scorer: Any = None,
    progress: Progress | None = None,
    restart: bool = False,
) -> SFTReport:
    """Build the SFT dataset under ``config.output_dir``; resumable unless ``restart``."""
    out_dir = Path(config.output_dir)
    tick: Progress = progress or (lambda *_: None)
    prepared = prepare(config, out_dir)
    report = SFTReport(prepared=prepared.summary())
    queries = make_queries(prepared.train, config)
    wm = world_model or default_world_model(config)
    judge = scorer or default_scorer(config)

    async def run(log: ResumeLog) -> None:
        try:
            report.call_errors = await run_rejection_sampling(queries, wm, judge, config, log, tick)
        finally:
            if world_model is None:
                await wm.aclose()

    with ResumeLog(out_dir, "sft", config, restart=restart) as log:
        asyncio.run(run(log))
        done = log.done
    rows = []
    for q in queries:
        counts = report.per_domain[q.sample.domain]
        counts["queries"] += 1
        counts["kept"] += 0  # listed even when nothing passes
        rec = done.get(q.key)
        if rec is None:
            counts["failed_queries"] += 1
            continue
        cands = rec["candidates"]
        counts["rollouts"] += len(cands)
        counts["errors"] += sum(1 for c in cands if c["error"])
        counts["valid"] += sum(1 for c in cands if c["status"] == "complete" and not c["error"])
        counts["passed"] += sum(1 for c in cands if c["passed"])
        if rec["kept"]:
            counts["kept"] += 1
            rows.append({k: rec[k] for k in _ROW_KEYS} | {"domain": rec["domain"]})
    report.rows = len(rows)
    report.output = str(write_dataset(out_dir, rows, config.output_format)[0])
    write_report(out_dir, config, report.to_dict())
    return report


