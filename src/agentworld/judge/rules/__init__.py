"""The offline rule scorer: deterministic 1-5 scores per dimension, no model involved.

It is a proxy for an LLM judge, useful without an API and as a second opinion. What
each dimension measures (pred = the parsed prediction, truth = the real observation):

- ``format``: does pred follow the truth's layout? Per domain: mcp -- strict JSON of the
  same type with the same keys; terminal -- same echo line, a final prompt exactly when
  the truth ends with one, no chat wrapping, similar line shapes; search -- ``[n] url``
  blocks with Title/Snippet lines, numbered from 1, a similar count (plain text for page
  extracts); web/os -- header lines and indented tree-node lines in the truth's
  proportion (os also: geometry present when the truth has it); android -- balanced
  HTML-like tags, the same tag vocabulary, ids on elements; swe -- numbered file views
  with consecutive, matching line numbers. Others: line-shape similarity.
- ``factuality``: exact reproduction of deterministic content, i.e. pieces of the truth
  the session already fixes: truth lines that occur verbatim in an earlier action or
  observation or in the current action, and the current action's literal values (JSON
  string arguments, quoted strings of a call) that the truth repeats; for terminal also
  the echoed command line; for mcp JSON leaf values stated earlier in the session.
  Score = share of those found in pred (whitespace-normalised; for mcp inside pred's
  decoded JSON values). When the session fixes nothing, bag-of-words F1 with the truth
  stands in.
- ``consistency``: contradictions with the session history: a fact pred states (``key:
  value`` lines, JSON fields, element id -> role, window name -> role, user@host of the
  prompt, isError of a tool call) that differs from what an earlier observation said
  while the truth still agrees with that observation. 5 with none, minus 2 for each.
- ``realism``: length proportion (``exp(-|ln(len_pred / len_truth)|)``) and line-shape
  similarity averaged, minus 2 for each kind of text no environment prints (addressing
  a reader or judge, self-praise, chat fences, leftover tags).
- ``quality``: completeness -- share of the truth's pieces present in pred (lines; for
  mcp ``key=value`` per JSON leaf and payload lines), exactly or with token F1 >= 0.8 --
  weighted 0.7, with length proportion 0.3.

Fractions map to 1-5 as ``1 + round(4 * f)``. A prediction that is truncated, missing or
failed scores 1 on every dimension (a valid, bad judgement -- not a judge failure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.judge.rules import android, mcp, os, search, swe, terminal, web
from agentworld.judge.rules._common import (
    DomainRules,
    length_proportion,
    meta_hits,
    shape_similarity,
    to_scale,
    token_f1,
    unit_recall,
)
from agentworld.records.verdict import Judgement

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.prediction import Prediction

RULES: dict[str, DomainRules] = {m.RULES.name: m.RULES for m in (mcp, search, terminal, swe, web, os, android)}


def rules_for(domain: str) -> DomainRules:
    return RULES.get(domain, DomainRules())


def score_observation(sample: BenchSample, pred: str | None) -> tuple[dict[str, int], dict[str, Any]]:
    """Scores and the measurements behind them for one predicted observation."""
    if pred is None:
        return dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), 1), {
            "reason": "no valid observation"
        }
    rules = rules_for(sample.domain)
    truth = sample.ground_truth
    fmt, fmt_why = rules.format_fraction(pred, truth, sample)
    determined = rules.determined(sample)
    if determined:
        fact = sum(rules.found(u, pred) for u in determined) / len(determined)
    else:
        fact = token_f1(pred, truth)
    contradictions = rules.contradictions(pred, sample)
    length = length_proportion(pred, truth)
    shape = shape_similarity(pred, truth)
    meta = meta_hits(pred, truth)
    completeness = unit_recall(rules.units(truth), rules.units(pred), fuzzy=0.8)
    scores = {
        "format": to_scale(fmt),
        "factuality": to_scale(fact),
        "consistency": max(1, 5 - 2 * len(contradictions)),
        "realism": max(1, to_scale((length + shape) / 2) - 2 * len(meta)),
        "quality": to_scale(0.7 * completeness + 0.3 * length),
    }
    details = {
        "format": fmt_why,
        "determined_lines": len(determined),
        "factuality_basis": "determined lines" if determined else "token F1",
        "factuality_fraction": round(fact, 3),
        "contradictions": contradictions,
        "length_proportion": round(length, 3),
        "shape_similarity": round(shape, 3),
        "meta_text": meta,
        "completeness": round(completeness, 3),
    }
    return scores, details


class RuleScorer:
    """Deterministic scorer; same inputs, same scores, on any machine."""

    name = "rules"

    def score_sync(self, sample: BenchSample, prediction: Prediction) -> Judgement:
        pred = prediction.observation if prediction.ok else None
        scores, details = score_observation(sample, pred)
        if pred is None:
            details["status"] = str(prediction.status)
            if prediction.error:
                details["error"] = prediction.error
        weak = [d for d, v in scores.items() if v <= 2]
        return Judgement(
            judge=self.name,
            scores=scores,
            strengths=", ".join(d for d, v in scores.items() if v >= 4),
            weaknesses=", ".join(weak),
            content_type="deterministic" if details.get("determined_lines") else "open",
            details=details,
        )

    async def score(self, sample: BenchSample, prediction: Prediction) -> Judgement:
        return self.score_sync(sample, prediction)


__all__ = ["RULES", "DomainRules", "RuleScorer", "rules_for", "score_observation"]
