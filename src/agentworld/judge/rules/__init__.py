"""The offline rule scorer: deterministic 1-5 scores per dimension, no model involved.

It is a proxy for an LLM judge, useful without an API and as a second opinion; its
agreement with a reviewer's labels is measured by ``benchmarks/scorer_agreement.py``
on ``benchmarks/calibration/``. pred = the parsed prediction, truth = the real
observation, session = the environment's initial state (the system prompt's section),
the earlier turns and the action. Each domain module
(``terminal``, ``mcp``, ``search``, ``swe``; ``web``, ``os``, ``android`` use the
defaults for most) says what its output looks like.

First, answers that are no attempt score 1 everywhere: empty where the environment
prints something, the action copied back, or only praise / words to a judge.

Each observation splits into its frame -- what every answer carries whatever happened
(a terminal's echo line and next prompt, a shell tool's working-directory and exit-code
footer) -- and its body, the action's result.

- ``factuality``: the real output's content, reproduced or contradicted. The frame
  counts a quarter; the body the rest, matched as whole units (lines; for mcp
  ``key=value`` per JSON leaf) and as value tokens (``08:29:35`` is one token, so a
  changed digit is a miss), recall weighted over precision (F2): content left out
  costs less than content stated wrongly. Pieces of the body the session fixes
  exactly (truth lines seen earlier or in the action, the action's literal values the
  truth repeats) are matched on their own and weigh their share of the body, so half
  of the fixed output earns about half. Altered copies of real units (same build,
  other values) multiply the result down, impossible values halve it (dates/times no
  clock shows; os: a widget box past the display's edge, of negative size or with a
  leading zero; web: tabs not numbered 0, 1, ..., a scroll past the page), a
  contradiction costs one point.
- ``consistency``: with the action and the session. Not an answer to this action
  scores 1: terminal -- echo of another command, or output not shaped like the
  command's (``ls -l`` rows, grep hits, a diff, pytest summary); mcp -- an error of
  another tool; search -- another tool's kind of answer (a memory entry for a web
  search), another page's ``URL:``, results under other queries; swe -- an editor
  answer for a shell command or the reverse, text neither tool prints (no editor
  message, no shell footer), another file than the real answer's,
  lines outside the view range, another working directory; web -- a page at another
  URL where the session fixes it (the page it stays on, a clicked link's url, the
  start page), a page without the text the session typed that the real one shows;
  os -- none of the windows the session opened; all -- none of the
  action's values the truth repeats (matched as whole words). Otherwise the share of
  the real body's session-grounded tokens (names, paths, values seen earlier,
  boilerplate such as a repeated prompt excluded) pred's body repeats, minus 2 per
  contradiction (at most two): a fact differing from an earlier observation, a
  session value replaced in a copied unit (``rm -f *.o comet`` after building
  ``falcon``), a field the call sets echoed with another value, another user@host or
  working directory in the prompt, isError flipped, an earlier turn's output repeated
  where the real output is new (stale); terminal: a job notice for a command the
  session never ran, a new background job numbered as one still running. On a screen,
  lines of the screen before the action are the session itself: a screen left as it was
  is stale, not contradicted.
- ``realism``: could the environment print this for this action: its kind of output
  (terminal: no output, an error, the command's output shape, a full-screen program;
  mcp: result, error result, other JSON, text; search: results, page, memory answer;
  swe: view, edit, created, editor error, command output; web/os: a page or desktop
  state, an error, other text) matching the truth's (0.4),
  laid out as the domain lays it out (the format fraction, 0.4) and of a plausible
  length (0.2); the screen before the action shown again (screens) and an earlier,
  other command's output under this command's echo line (terminal) earn no kind
  credit; minus 2 per kind of text no environment prints (praise, words to a
  judge, chat fences) and 3 for impossible values or a broken structure (a tree node
  under no parent, a line cut off, a job line in no form bash prints). Another action's output is at
  most 3 when it is this action's kind of output, else 1; an answer with none of the
  output the session fixes for the most part (a file read back), not even altered
  copies of it, at most 2.
- ``format``: the domain layout (terminal: echo line, final prompt exactly when the
  truth ends with one, no chat wrapping, line shapes; mcp: strict JSON of the same
  type with the same keys; search: ``[n] url`` blocks each Title then Snippet,
  numbered from 1, similar count; swe: numbered views with consecutive, matching
  numbers; web: the URL/Title/Tabs/Focused/Scroll header and tree lines; os: the
  tree, its window list and widget boxes; android: markup rules) weighted 0.7 with
  the kind match 0.3 for the domains that type their kinds; minus 2 with
  reader-directed text or a broken structure.
- ``quality``: the overall verdict -- the geometric mean of the factuality,
  consistency and realism scores and completeness (share of the real body's units
  present, exactly or with token F1 >= 0.8, on the 1-5 scale), rounded: an answer is
  as useful as its weakest side.

Fractions map to 1-5 as ``1 + round(4 * f)``. A prediction that is truncated, missing or
failed scores 1 on every dimension (a valid, bad judgement -- not a judge failure).

Actions are read bare (:meth:`BenchSample.with_bare_actions`): a record whose user turns
frame the action as published records do scores as the same record with bare actions.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentworld.judge.rules import android, mcp, os, search, swe, terminal, web
from agentworld.judge.rules._common import (
    DomainRules,
    altered_share,
    distinct_facts,
    fixed_tokens,
    grounded_recall,
    is_action_copy,
    length_proportion,
    mask_metadata,
    meta_hits,
    multiset_f1,
    norm,
    only_meta,
    praise_hits,
    runaway_repetition,
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


def _no_answer(reason: str) -> tuple[dict[str, int], dict[str, Any]]:
    return dict.fromkeys(DIMENSIONS, 1), {"reason": reason}


# Recall counts this many times as much as precision in the content match: content left
# out costs less than content stated wrongly, which altered copies charge on their own.
RECALL_BETA = 2.0
# The frame's share of factuality when the real observation has one (the echo line and
# prompt of a screen): right, but it says little of what the action did.
FRAME_WEIGHT = 0.25
CHANGE_WEIGHT = 0.5
"""Screen domains: the share of factuality that hangs on reproducing what the action
changed on the screen (the rest of a screen is mostly the screen before)."""


def factuality_fraction(rules: DomainRules, sample: BenchSample, pred: str) -> tuple[float, dict[str, Any]]:
    """The real observation's content reproduced (0-1), and the measurements behind it.

    The body (the observation without its frame) is matched as whole units and as value
    tokens, recall-weighted; pieces of it the session fixes exactly are matched on their
    own and weigh their share of its tokens. The frame counts ``FRAME_WEIGHT``. Altered
    copies of real units multiply the result down."""
    truth = sample.ground_truth
    # Runtime metadata the session did not fix (sizes, times, pids) counts by its format.
    # Only the truth's fixed values stay: another number in pred is wrong by format or,
    # where the truth's is fixed, by the mismatch.
    known = fixed_tokens(sample) & set(ws_tokens(truth))
    t_body, p_body = mask_metadata(rules.body(truth), known), mask_metadata(rules.body(pred), known)
    t_units, p_units = rules.units(t_body), rules.units(p_body)
    frame = list((Counter(rules.units(truth)) - Counter(rules.units(rules.body(truth)))).elements())
    frame_found = unit_recall(frame, rules.units(pred)) if frame else None
    determined = rules.determined(sample)
    in_body = [u for u in determined if norm(u) in norm(t_body)]
    det = sum(rules.found(u, p_body) for u in in_body) / len(in_body) if in_body else None
    if t_units:
        open_match = 0.5 * multiset_f1(p_units, t_units, RECALL_BETA) + 0.5 * multiset_f1(
            ws_tokens(p_body), ws_tokens(t_body), RECALL_BETA)
    else:
        # Nothing but the frame is due: invented output is wrong content.
        open_match = float(not p_units)
    # Fixed pieces weigh what they hold of the body: a file name on a page of new text
    # is little of it, a file read back is all of it.
    share = min(1.0, len(ws_tokens(" ".join(in_body))) / max(1, len(ws_tokens(t_body))))
    content = open_match if det is None else share * det + (1 - share) * open_match
    base = content if frame_found is None else FRAME_WEIGHT * frame_found + (1 - FRAME_WEIGHT) * content
    changed = rules.changed(sample)
    change_found = unit_recall(changed, rules.units(rules.body(pred))) if changed else None
    if change_found is not None:
        base *= (1 - CHANGE_WEIGHT) + CHANGE_WEIGHT * change_found
    altered, altered_examples = altered_share(rules.units(mask_metadata(pred, known)),
                                              rules.units(mask_metadata(truth, known)))
    why = {
        "change_found": None if change_found is None else round(change_found, 3),
        "determined_lines": len(determined),
        "determined_found": None if det is None else round(det, 3),
        "determined_share": round(share, 3),
        "frame_found": None if frame_found is None else round(frame_found, 3),
        "open_match": round(open_match, 3),
        "altered_share": round(altered, 3),
        "altered": altered_examples,
    }
    # Invented content: the real output reproduced and more lines added that match none of
    # it (files a listing does not have). F2 forgives extra units; a reader does not.
    extra = [u for u in p_units if u not in set(t_units)]
    invented = len(extra) / len(p_units) if p_units and extra and unit_recall(t_units, p_units) >= 0.8 else 0.0
    why["invented_share"] = round(invented, 3)
    return base * (1 - altered) * (1 - invented), why


def score_observation(sample: BenchSample, pred: str | None) -> tuple[dict[str, int], dict[str, Any]]:
    """Scores and the measurements behind them for one predicted observation."""
    if pred is None:
        return _no_answer("no valid observation")
    # Every rule reads the bare actions: a record in the published presentation (turn
    # header, ``**Action:**``, a fence) scores as its bare twin does.
    sample = sample.with_bare_actions()
    rules = rules_for(sample.domain).for_sample(sample)
    truth = sample.ground_truth
    if (why := degenerate_answer(sample, pred)) is not None:
        return _no_answer(why)
    meta = meta_hits(pred, truth)

    fact, fact_why = factuality_fraction(rules, sample, pred)
    contradictions = rules.contradictions(pred, sample)
    # Output repeated from an earlier turn is inconsistent with the session having moved
    # on; what it misses of the real output factuality counts already.
    stale = rules.stale_output(pred, sample)
    off_action = rules.answers_action(pred, sample)

    # consistency: an answer to this action, repeating what the session fixed, with no
    # contradiction of the action or of earlier turns.
    # The body's: the frame (a screen's echo line) repeats the action whatever happened.
    recall, n_grounded = grounded_recall(rules.body(pred), sample, rules.body(truth))
    if not n_grounded:
        # Nothing of the real output is fixed by the session: an answer cannot earn
        # consistency by saying nothing checkable; it earns half by being this action's
        # output, the rest by how well it matches what the action printed.
        recall = 0.5 + 0.5 * fact
    # Penalties count at most two contradictions: one more says little more.
    n_contra = min(2, distinct_facts(contradictions) + bool(stale))
    consistency = to_scale(recall) - 2 * n_contra
    if off_action:
        consistency = 1
    unchanged = rules.unchanged(pred, sample) and not rules.unchanged(truth, sample)
    if stale or unchanged:
        # The session moved on and the answer did not: an earlier turn's output, or the
        # screen before an action that changes it (the rubrics' stale state, 1-2).
        consistency = min(consistency, 2)

    # realism and format: this domain's kind of output for this action, built alike.
    kind_pred, kind_truth = rules.kind(pred, sample), rules.kind(truth, sample)
    same_kind = float(kind_pred == kind_truth)
    length = length_proportion(pred, truth)
    shape = shape_similarity(pred, truth)
    # Judged against the truth: what the real observation shows itself is possible.
    impossible = rules.impossible(pred, sample) if not rules.impossible(truth, sample) else []
    malformed = rules.malformed(pred, sample) if not rules.malformed(truth, sample) else []
    if impossible:
        fact *= 0.5
    # An earlier command's output shown again is that command's kind of output (terminal).
    other_output = rules.other_command_output(pred, sample) if stale else None
    runaway = runaway_repetition(pred, truth)
    fmt, fmt_why = rules.format_fraction(pred, truth, sample)
    completeness = unit_recall(rules.units(rules.body(truth)), rules.units(rules.body(pred)), fuzzy=0.8)
    scores = {
        # A broken structure (a tree node under no parent, a line cut off) is a layout
        # fault as much as reader-directed text is.
        "format": to_scale(0.7 * fmt + 0.3 * same_kind if rules.typed_kinds else fmt) - 2 * bool(meta or malformed),
        "factuality": max(1, to_scale(fact) - bool(contradictions)),
        "consistency": max(1, consistency),
        # realism: could the environment print this for this action -- its kind of
        # output, laid out as the domain lays it out, of a plausible length.
        # An unchanged screen is the application's kind of output, but not what an action
        # with an effect shows.
        "realism": (to_scale(0.4 * (same_kind and not (unchanged or other_output)) + 0.4 * fmt + 0.2 * length)
                    - 2 * len(meta)
                    - 3 * bool(impossible or malformed or runaway)
                    # What contradicts the session could not have been printed in it.
                    - min(2, distinct_facts(contradictions))),
    }
    if stale:
        # Another moment's output: what it states is not this action's result, and this
        # action would not have printed it.
        scores["factuality"] = min(scores["factuality"], 2)
    if (fact_why["determined_share"] >= 0.5 and fact_why["determined_found"] == 0 and not fact_why["altered"]
            and rules.body(pred).strip()):
        # The session fixes most of the real output (a file read back) and the answer
        # shows none of it, not even with other values: other text than this
        # environment prints here.
        scores["realism"] = min(scores["realism"], 2)
    if off_action:
        # Another action's output: what it states is not this action's result. Output of
        # the kind this action prints (another message echoed) could pass for a real
        # one; another kind (a file view for a grep) could not.
        scores["factuality"] = min(scores["factuality"], 2)
        scores["realism"] = min(scores["realism"], 2 if same_kind else 1)
    # quality is the overall verdict: right content, consistent with the session, complete,
    # and the kind and length of output this action gets. A geometric mean: an observation
    # is only as useful as its weakest side (complete but for another command is useless).
    parts = (scores["factuality"], scores["consistency"], to_scale(completeness), max(1, scores["realism"]))
    scores["quality"] = round(math.prod(parts) ** (1 / len(parts)))
    scores = {d: max(1, min(5, v)) for d, v in scores.items()}
    details = {
        "format": fmt_why,
        "format_fraction": round(fmt, 3),
        "kind": {"prediction": kind_pred, "truth": kind_truth},
        **fact_why,
        "factuality_fraction": round(fact, 3),
        "contradictions": contradictions,
        "stale_output": stale,
        "off_action": off_action,
        "grounded_recall": round(recall, 3),
        "grounded_tokens": n_grounded,
        "length_proportion": round(length, 3),
        "shape_similarity": round(shape, 3),
        "impossible_values": impossible,
        "malformed": malformed,
        "unchanged_screen": unchanged,
        "runaway": runaway,
        "other_command_output": other_output,
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
