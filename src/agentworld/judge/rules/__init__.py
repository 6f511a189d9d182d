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
    altered_share,
    grounded_recall,
    impossible_values,
    is_action_copy,
    only_meta,
    length_proportion,
    meta_hits,
    multiset_f1,
    praise_hits,
    shape_similarity,
    to_scale,
    unit_recall,
    ws_tokens,
)
from agentworld.records.verdict import DIMENSIONS, Judgement

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.prediction import Prediction

RULES: dict[str, DomainRules] = {m.RULES.name: m.RULES for m in (mcp, search, terminal, swe, web, os, android)}


def rules_for(domain: str) -> DomainRules:
    return RULES.get(domain, DomainRules())


def degenerate_answer(sample: BenchSample, pred: str) -> str | None:
    """Why ``pred`` is no attempt at the observation at all, or None: ``empty`` (the
    environment prints something), ``action copy`` (the action repeated back) or ``meta
    only`` (talk about the answer -- praise, a word to the judge -- and nothing of it)."""
    truth = sample.ground_truth
    if not pred.strip() and truth.strip():
        return "empty"
    if is_action_copy(pred, sample):
        return "action copy"
    if only_meta(pred, truth):
        return "meta only"
    return None


def _no_answer(reason: str, *, realism: int = 1) -> tuple[dict[str, int], dict[str, Any]]:
    scores = dict.fromkeys(DIMENSIONS, 1)
    scores["realism"] = realism
    return scores, {"reason": reason}


def score_observation(sample: BenchSample, pred: str | None) -> tuple[dict[str, int], dict[str, Any]]:
    """Scores and the measurements behind them for one predicted observation."""
    if pred is None:
        return _no_answer("no valid observation")
    rules = rules_for(sample.domain)
    truth = sample.ground_truth
    if (why := degenerate_answer(sample, pred)) is not None:
        return _no_answer(why)
    meta = meta_hits(pred, truth)

    # factuality: session-fixed pieces reproduced, the rest of the truth matched as whole
    # units and value tokens; altered copies of real units and contradictions cost.
    determined = rules.determined(sample)
    det = sum(rules.found(u, pred) for u in determined) / len(determined) if determined else None
    t_units, p_units = rules.units(truth), rules.units(pred)
    open_match = 0.5 * multiset_f1(p_units, t_units) + 0.5 * multiset_f1(ws_tokens(pred), ws_tokens(truth))
    altered, altered_examples = altered_share(p_units, t_units)
    base = open_match if det is None else 0.5 * det + 0.5 * open_match
    fact = base * (1 - altered)
    contradictions = rules.contradictions(pred, sample)
    off_action = rules.answers_action(pred, sample)

    # consistency: an answer to this action, repeating what the session fixed, with no
    # contradiction of the action or of earlier turns.
    recall, n_grounded = grounded_recall(pred, sample)
    # Penalties count at most two contradictions: one more says little more.
    n_contra = min(2, len(contradictions))
    consistency = to_scale(recall) - 2 * n_contra
    if off_action:
        consistency = 1

    # realism and format: this domain's kind of output for this action, built alike.
    kind_pred, kind_truth = rules.kind(pred, sample), rules.kind(truth, sample)
    same_kind = float(kind_pred == kind_truth)
    length = length_proportion(pred, truth)
    shape = shape_similarity(pred, truth)
    impossible = impossible_values(pred) if not impossible_values(truth) else []
    if impossible:
        fact *= 0.5
    fmt, fmt_why = rules.format_fraction(pred, truth, sample)
    completeness = unit_recall(t_units, p_units, fuzzy=0.8)
    scores = {
        "format": to_scale(0.7 * fmt + 0.3 * same_kind if rules.typed_kinds else fmt) - 2 * bool(meta),
        "factuality": to_scale(fact) - bool(contradictions),
        "consistency": consistency,
        "realism": to_scale(0.4 * same_kind + 0.3 * length + 0.3 * shape) - 2 * len(meta) - 3 * bool(impossible),
        "quality": to_scale(0.5 * completeness + 0.3 * fact + 0.2 * length) - n_contra,
    }
    if off_action:
        # Another action's output: what it states is not this action's result.
        scores["quality"] = 1
        scores["factuality"] = min(scores["factuality"], 2)
        scores["realism"] = min(scores["realism"], 2)
    scores = {d: max(1, min(5, v)) for d, v in scores.items()}
    details = {
        "format": fmt_why,
        "kind": {"prediction": kind_pred, "truth": kind_truth},
        "determined_lines": len(determined),
        "determined_found": None if det is None else round(det, 3),
        "open_match": round(open_match, 3),
        "altered_share": round(altered, 3),
        "altered": altered_examples,
        "factuality_fraction": round(fact, 3),
        "contradictions": contradictions,
        "off_action": off_action,
        "grounded_recall": round(recall, 3),
        "grounded_tokens": n_grounded,
        "length_proportion": round(length, 3),
        "shape_similarity": round(shape, 3),
        "impossible_values": impossible,
        "meta_text": meta,
        "completeness": round(completeness, 3),
    }
    return scores, details


def score_total(sample: BenchSample, pred: str | None) -> float:
    """The mean of the five rule scores (1-5)."""
    scores, _ = score_observation(sample, pred)
    return sum(scores.values()) / len(scores)


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


__all__ = ["RULES", "DomainRules", "RuleScorer", "degenerate_answer", "meta_hits", "praise_hits", "rules_for", "score_observation",
           "score_total"]
