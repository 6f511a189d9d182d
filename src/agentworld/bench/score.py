"""Aggregate verdicts into benchmark scores (docs/design.md#benchmark-records-and-scoring).

For every (world model, judge) pair: per domain and dimension the mean of valid (>0)
scores, reported as ``(mean - 1) / 4 * 100``; per domain and overall the same transform
of the mean sample total (a sample's total is the mean of its valid dimensions), over
valid verdicts only. Overall comes twice: micro (over all samples, as the published
script's ``score`` prints it) and macro (the mean of the domains, as the paper reports
it). As in the published script, predictions with nothing to judge (failed calls, no
answer) are left out of every mean and truncated answers are judged; failed calls,
missing answers and failed verdicts are each counted per domain and judge, never
dropped silently. Each pair's :class:`~agentworld.bench.protocol.Protocol` says how
its numbers were made. With several judges on one model, pairwise Spearman
correlations of sample totals measure how far they agree.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, Field

from agentworld.bench.protocol import Protocol, protocol_of
from agentworld.domains import DOMAINS
from agentworld.judge.llm import left_out
from agentworld.parsing import status_counts
from agentworld.records.verdict import DIMENSIONS, JudgedRecord

PROXY_NOTE = (
    "Scores from the `rules` judge are deterministic proxies (structure, exact match of "
    "content the session fixes, contradictions, length and completeness against the real "
    "observation), not an LLM judge's verdict; compare them only with other rule scores."
)


def normalize(mean: float | None) -> float | None:
    """The published 0-100 scale: ``(mean - 1) / 4 * 100``."""
    return None if mean is None else (mean - 1.0) / 4.0 * 100.0


class Cell(BaseModel):
    mean: float | None = None
    """Mean on the 1-5 scale."""
    score: float | None = None
    """``(mean - 1) / 4 * 100``."""
    n: int = 0

    @classmethod
    def of(cls, values: list[float]) -> Cell:
        mean = sum(values) / len(values) if values else None
        return cls(mean=mean, score=normalize(mean), n=len(values))


class Block(BaseModel):
    """Scores of one domain (or of all domains together) for one model and judge."""

    dimensions: dict[str, Cell] = Field(default_factory=dict)
    total: Cell = Field(default_factory=Cell)
    samples: int = 0
    valid: int = 0
    """Judged samples with a valid verdict: the ones every mean is over."""
    failed: int = 0
    """Judged samples whose verdict failed (the judge's output never parsed)."""
    missing_predictions: int = 0
    """Predictions with no answer (empty output, nothing outside the reasoning): left out."""
    failed_predictions: int = 0
    """Predictions whose call failed: left out."""
    statuses: dict[str, int] = Field(default_factory=dict)
    """Predictions per parse status (complete, untagged, truncated, missing, unclosed)."""
    prediction_tokens: float = 0.0
    judge_tokens: float = 0.0
    cost: float | None = None
    """Mean USD per sample (prediction plus judging) when prices were given."""


class Macro(BaseModel):
    """The mean of the domains (each domain weighs the same, whatever its sample count)."""

    dimensions: dict[str, Cell] = Field(default_factory=dict)
    total: Cell = Field(default_factory=Cell)
    """``n`` is the number of domains with a score."""


class GroupScore(BaseModel):
    model: str
    judge: str
    domains: dict[str, Block] = Field(default_factory=dict)
    overall: Block = Field(default_factory=Block)
    """Micro: every valid sample weighs the same (the published script's overall)."""
    macro: Macro = Field(default_factory=Macro)
    """Macro: every domain weighs the same (the paper's overall)."""
    protocol: Protocol | None = None


class Agreement(BaseModel):
    model: str
    judge_a: str
    judge_b: str
    n: int
    spearman: float | None
    p_value: float | None


class ScoreReport(BaseModel):
    groups: list[GroupScore] = Field(default_factory=list)
    agreement: list[Agreement] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


Prices = Mapping[str, tuple[float, float]]
"""Name (a model or judge as recorded) -> USD per million (prompt, completion) tokens."""


def _cost(prices: Prices, name: str, prompt: int, completion: int) -> float | None:
    if name not in prices:
        return None
    p_in, p_out = prices[name]
    return (prompt * p_in + completion * p_out) / 1e6


def _block(records: list[JudgedRecord], prices: Prices) -> Block:
    dims: dict[str, list[float]] = {d: [] for d in DIMENSIONS}
    totals: list[float] = []
    failed = 0
    apart = {"missing": 0, "failed": 0}
    costs: list[float] = []
    for r in records:
        j = r.judgement
        why = left_out(r.prediction_error, r.prediction_status, r.observation)
        if why is not None:
            apart[why] += 1
        elif j.ok and j.total is not None:
            totals.append(j.total)
            for d in DIMENSIONS:
                if j.scores.get(d, 0) > 0:
                    dims[d].append(j.scores[d])
        else:
            failed += 1
        parts = [
            _cost(prices, r.model, r.prediction_prompt_tokens, r.prediction_completion_tokens),
            _cost(prices, r.judge, j.prompt_tokens, j.completion_tokens),
        ]
        if any(p is not None for p in parts):
            costs.append(sum(p for p in parts if p is not None))
    n = len(records) or 1
    return Block(
        dimensions={d: Cell.of(v) for d, v in dims.items()},
        total=Cell.of(totals),
        samples=len(records),
        valid=len(totals),
        failed=failed,
        missing_predictions=apart["missing"],
        failed_predictions=apart["failed"],
        # Verdicts written before statuses were stored: an observation means a closed block.
        statuses=status_counts(r.prediction_status or ("complete" if r.observation is not None else "missing") for r in records),
        prediction_tokens=sum(r.prediction_prompt_tokens + r.prediction_completion_tokens for r in records) / n,
        judge_tokens=sum(r.judgement.prompt_tokens + r.judgement.completion_tokens for r in records) / n,
        cost=sum(costs) / n if costs else None,
    )


def macro_of(domains: Iterable[Block]) -> Macro:
    """The mean over domains of each domain's means (domains without a score are skipped)."""
    blocks = list(domains)

    def over(cells: list[Cell]) -> Cell:
        return Cell.of([c.mean for c in cells if c.mean is not None])

    return Macro(
        dimensions={d: over([b.dimensions[d] for b in blocks if d in b.dimensions]) for d in DIMENSIONS},
        total=over([b.total for b in blocks]),
    )


def domain_order(domain: str) -> tuple[int, str]:
    """Sort key: the canonical domain order, unknown names last."""
    return (DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain)


def spearman(a: list[float], b: list[float]) -> tuple[float | None, float | None]:
    """Spearman's rho and its p-value; None when undefined (too few or constant values)."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None, None
    from scipy.stats import spearmanr

    res = spearmanr(a, b)
    return float(res.statistic), float(res.pvalue)


def score_records(records: Iterable[JudgedRecord], *, prices: Prices | None = None) -> ScoreReport:
    """Scores per (model, judge), per domain and overall, plus judge agreement."""
    prices = prices or {}
    groups: dict[tuple[str, str], list[JudgedRecord]] = defaultdict(list)
    for r in records:
        groups[(r.model, r.judge)].append(r)
    report = ScoreReport()
    for (model, judge), recs in sorted(groups.items()):
        by_domain: dict[str, list[JudgedRecord]] = defaultdict(list)
        for r in recs:
            by_domain[r.domain].append(r)
        domains = {d: _block(by_domain[d], prices) for d in sorted(by_domain, key=domain_order)}
        report.groups.append(
            GroupScore(
                model=model,
                judge=judge,
                domains=domains,
                overall=_block(recs, prices),
                macro=macro_of(domains.values()),
                protocol=protocol_of(judge, recs),
            )
        )
    report.agreement = _agreement(groups)
    if any(g.judge == "rules" for g in report.groups):
        report.notes.append(PROXY_NOTE)
    return report


def _agreement(groups: Mapping[tuple[str, str], list[JudgedRecord]]) -> list[Agreement]:
    out = []
    models = sorted({m for m, _ in groups})
    for model in models:
        judges = sorted(j for m, j in groups if m == model)
        totals = {
            j: {(r.uid, r.sample_index): r.judgement.total for r in groups[(model, j)] if r.judgement.ok}
            for j in judges
        }
        for i, ja in enumerate(judges):
            for jb in judges[i + 1 :]:
                keys = sorted(totals[ja].keys() & totals[jb].keys())
                a = [totals[ja][k] for k in keys]
                b = [totals[jb][k] for k in keys]
                rho, p = spearman(a, b)
                out.append(Agreement(model=model, judge_a=ja, judge_b=jb, n=len(keys), spearman=rho, p_value=p))
    return out
