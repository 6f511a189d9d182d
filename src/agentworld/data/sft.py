"""SFT dataset by rejection sampling (docs/design.md#training-pipeline).

Each query is one turn of a training trajectory (chosen by a turn policy) under a
system prompt whose wording variant is drawn per query. A world model produces ``k``
rollouts; a scorer (the offline rule scorer or an LLM judge) compares each with the
real observation. A mean score is not enough to accept a rollout: one that dropped real
output lines still averaged 4.6/5 on the rule scorer. So a rollout is accepted only when
its total reaches the threshold *and* its content checks out against the real
observation: it reproduces the content the session already determines, most of the real
lines, and little that the real observation lacks. The best accepted rollout becomes the
target under the output contract: its reasoning inside ``<think>`` (kept, dropped or
required), then the observation block -- the real observation by default (``target:
truth``), or the rollout's own. Every query's outcome is logged as soon as it is judged,
so a killed run resumes where it stopped; a query whose every call failed is not logged
and is retried.
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
from agentworld.judge.rules import rules_for, score_observation, unit_recall
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
    """Queries in a stable order; the variant of each is a seeded draw of its own key.
    With ``config.demos`` each query's system prompt carries its demonstrations."""
    demos = None
    if config.demos:
        from agentworld.models.demos import Demonstrations, DemoSettings

        demos = Demonstrations.of_trajectories(DemoSettings(config.demos), trajs)
    out = []
    for traj in trajs:
        for k in select_turns(traj, config.turn_policy, config.seed):
            variant = keyed_rng(config.seed, "variant", traj.id, k).randrange(NUM_VARIANTS)
            system = trajectory_system_prompt(traj, variant=variant)
            sample = make_sample(traj, k, system_str=system)
            if demos is not None:
                sample = with_demos(sample, demos, traj.id)
            out.append(Query(f"{traj.id}:{k}", sample, variant, traj.id))
            if config.max_queries and len(out) >= config.max_queries:
                return out
    return out


def with_demos(sample: BenchSample, demos: Any, trajectory_id: str) -> BenchSample:
    """``sample`` with the demonstrations of its action in its system prompt, chosen as the
    runner chooses them at inference (same index, never the sample's own trajectory)."""
    messages = demos.apply(sample_messages(sample), sample.domain, exclude_trajectory=trajectory_id)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else sample.system_str
    return sample.model_copy(update={"system_str": system})


def kept_row(query: Query, target: str, score: float | None, judge: str) -> dict[str, Any]:
    """The dataset row of a kept query: its prompt, the target, and where it came from."""
    return {"prompt": sample_messages(query.sample), "completion": [{"role": "assistant", "content": target}],
            "score": score, "judge": judge, "trajectory_id": query.trajectory_id,
            "turn_idx": query.sample.turn_idx, "variant": query.variant}


def truth_record(query: Query) -> dict[str, Any]:
    """A query kept as it is (``k: 0``): the real observation is the target."""
    target = format_observation(query.sample.ground_truth, None)
    return {"domain": query.sample.domain, "candidates": [], "kept": True, **kept_row(query, target, None, "truth")}


@dataclass
class SFTReport:
    per_domain: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """queries, rollouts, valid (parsed), passed (accepted), kept, errors, failed_queries and
    ``rejected_<reason>`` per rejection reason."""
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


@dataclass(frozen=True)
class ContentCheck:
    """How a rollout's observation compares with the real one, measured by the rule scorer's
    units (lines; mcp: JSON leaves) whatever judge ranks the rollouts."""

    determined: float | None
    """Share of the determined pieces (fixed by the session) reproduced; None when none."""
    completeness: float
    """Share of the real observation's units present (exactly or token F1 >= 0.8)."""
    precision: float
    """Share of the rollout's units that the real observation has (same matching)."""


def check_content(sample: BenchSample, observation: str) -> ContentCheck:
    _, details = score_observation(sample, observation)
    sample = sample.with_bare_actions()  # the rules read bare actions, as the scorer does
    rules = rules_for(sample.domain)
    precision = unit_recall(rules.units(observation), rules.units(sample.ground_truth), fuzzy=0.8)
    # The share reproduced, not the factuality score: that one also charges contradictions,
    # which precision measures here.
    pieces = rules.determined(sample)
    determined = sum(rules.found(u, observation) for u in pieces) / len(pieces) if pieces else None
    return ContentCheck(determined, details["completeness"], precision)


def rejection(
    sample: BenchSample, pred: Prediction, judgement: Any, config: SFTConfig
) -> tuple[str | None, ContentCheck | None]:
    """Why ``pred`` is not an acceptable target (None when it is), and its content check."""
    if not pred.ok:
        return f"status_{pred.status}", None
    if not judgement.ok or judgement.total is None:
        return "judge_failed", None
    if config.reasoning == "require" and not pred.reasoning:
        return "no_reasoning", None
    check = check_content(sample, pred.observation or "")
    if judgement.total < config.threshold:
        return "below_threshold", check
    if check.determined is not None and check.determined < config.min_determined:
        return "determined_content_missing", check
    if check.completeness < config.min_completeness:
        return "incomplete", check
    if check.precision < config.min_precision:
        return "invented_content", check
    return None, check


def make_target(sample: BenchSample, pred: Prediction, config: SFTConfig) -> str:
    """The assistant text the model learns: optional reasoning, then the observation block."""
    observation = sample.ground_truth if config.target == "truth" else (pred.observation or "")
    reasoning = pred.reasoning if config.reasoning != "drop" else None
    return format_observation(observation, reasoning)


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
    rank: tuple[float, float] = (0.0, 0.0)
    for i, (p, j) in enumerate(zip(preds, judgements, strict=True)):
        why, check = rejection(query.sample, p, j, config)
        content = None if check is None else {k: v if v is None else round(v, 3) for k, v in vars(check).items()}
        candidates.append(
            {"total": j.total, "status": str(p.status), "error": p.error, "passed": why is None, "reject": why,
             "content": content}
        )
        # the judge's total ranks the accepted rollouts; completeness breaks ties
        if why is None and check is not None and (best is None or (j.total, check.completeness) > rank):
            best, rank = i, (j.total, check.completeness)
    rec: dict[str, Any] = {"domain": query.sample.domain, "candidates": candidates, "kept": best is not None}
    if best is not None:
        target = make_target(query.sample, preds[best], config)
        rec.update(kept_row(query, target, judgements[best].total, judgements[best].judge))
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

    async def run(log: ResumeLog) -> None:
        wm = world_model or default_world_model(config)
        judge = scorer or default_scorer(config)
        try:
            report.call_errors = await run_rejection_sampling(queries, wm, judge, config, log, tick)
        finally:
            if world_model is None:
                await wm.aclose()

    with ResumeLog(out_dir, "sft", config, restart=restart) as log:
        if config.k == 0:
            for q in queries:
                if q.key not in log.done:
                    log.add(q.key, truth_record(q))
        else:
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
        for c in cands:
            if c.get("reject"):
                counts[f"rejected_{c['reject']}"] += 1
        if rec["kept"]:
            counts["kept"] += 1
            rows.append({k: rec[k] for k in _ROW_KEYS} | {"domain": rec["domain"]})
    report.rows = len(rows)
    report.output = str(write_dataset(out_dir, rows, config.output_format)[0])
    write_report(out_dir, config, report.to_dict())
    return report


