"""Extraction of a model's answer and a judge's verdict from raw text, as published.

A prediction is the LAST closed ``<predicted_observation>`` block after every
reasoning block has been removed (closed, unclosed or nested ``<think>``), minus a
leading ``**Environment Observation:**`` marker. Where the published evaluation falls
back, so do we, and the status says which case applied:

- ``complete``: a closed block;
- ``untagged``: no block tags at all; the text outside reasoning is the answer (the
  published script keeps it too);
- ``truncated``: the last block was opened and never closed (the output was cut off);
  its partial text is kept for reports but it is not a valid answer;
- ``missing``: nothing usable.

A judge's verdict is read leniently like the published judge parser: the last
``<final_evaluation>`` block, else the text after an unclosed tag, else a JSON object
anywhere in the text; JSON slips are repaired and each score is read on its own
(:func:`parse_score`), so one bad dimension never voids the others.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentworld.prompts import MARKER, OBS_CLOSE, OBS_OPEN

EVAL_OPEN, EVAL_CLOSE = "<final_evaluation>", "</final_evaluation>"
_THINK_TAG = re.compile(r"<(/?)think\s*>", re.IGNORECASE)
_MARKER_LINE = re.compile(r"\A\s*" + re.escape(MARKER) + r"[ \t]*(?:\r?\n)?")
SCORE_MIN, SCORE_MAX = 1, 5


class Status(StrEnum):
    complete = "complete"
    untagged = "untagged"
    truncated = "truncated"
    """The answer block was opened and the token limit cut it off."""
    missing = "missing"
    unclosed = "unclosed"
    """The answer block was opened and the model stopped by itself without closing it
    (``finish_reason`` other than ``length``): not cut off, just malformed."""

    @property
    def usable(self) -> bool:
        """Whether the text is scored as the answer (the published script scores both)."""
        return self in (Status.complete, Status.untagged)


@dataclass(frozen=True)
class Extracted:
    """The last block of one tag: its text and whether it was closed."""

    status: Status
    text: str | None


@dataclass(frozen=True)
class ParsedPrediction:
    status: Status
    observation: str | None
    """The observation; for a truncated answer the partial text (not a valid answer)."""
    reasoning: str | None
    raw: str

    @property
    def ok(self) -> bool:
        """Scored as an answer: a closed block or untagged text."""
        return self.status.usable and self.observation is not None


def _split_once(text: str) -> tuple[list[str], list[str], int, int]:
    """One pass over the think tags: visible chunks, reasoning chunks, the depth left
    open at the end and where the outermost unclosed block's content starts."""
    visible: list[str] = []
    thought: list[str] = []
    depth = pos = opened_at = 0
    for m in _THINK_TAG.finditer(text):
        chunk = text[pos : m.start()]
        closing = m.group(1) == "/"
        if depth == 0 and not closing:
            visible.append(chunk)
            depth, opened_at = 1, m.end()
        elif depth == 0 and closing:
            # Orphan closer: what came before was reasoning whose opener is in the prompt.
            thought.extend(visible)
            thought.append(chunk)
            visible = []
        elif closing:
            thought.append(chunk)
            depth -= 1
        else:
            thought.append(chunk)
            depth += 1
        pos = m.end()
    (thought if depth > 0 else visible).append(text[pos:])
    return visible, thought, depth, opened_at


def split_reasoning(text: str, *, answer_tag: str | None = None) -> tuple[str, str | None]:
    """Remove reasoning from ``text``; return ``(visible_text, reasoning)``.

    Nested think blocks count as one block. An unclosed block swallows the rest of the
    text (the model ran out of tokens while thinking) -- unless ``answer_tag`` opens
    after it: then the model forgot to close its reasoning and the answer starts there,
    as the published parser reads it. A closing tag with no opening one means the
    template opened the block in the prompt (Qwen3 style): everything before it is
    reasoning.
    """
    # Each pass closes at most one unclosed block, and there are no more passes than tags.
    for _ in range(len(_THINK_TAG.findall(text)) + 1):
        visible, thought, depth, opened_at = _split_once(text)
        cut = text.lower().find(answer_tag.lower(), opened_at) if depth and answer_tag else -1
        if cut < 0:
            break
        text = text[:cut] + "</think>" * depth + text[cut:]
    reasoning = "".join(thought).strip() or None
    return "".join(visible), reasoning


def last_block(text: str, open_tag: str, close_tag: str) -> Extracted:
    """The last block of ``open_tag``: closed (``complete``), opened after the last
    closed one and never closed (``truncated``: the cut-off one is the answer, never the
    older closed one), or none (``missing``). A closer with no opener before it closes
    a block the prompt opened: the text before it is the block."""
    lo = text.lower()
    o, c = open_tag.lower(), close_tag.lower()
    end = lo.rfind(c)
    last_open = lo.rfind(o)
    if last_open > end:
        return Extracted(Status.truncated, text[last_open + len(open_tag) :])
    if end >= 0:
        start = lo.rfind(o, 0, end)
        if start >= 0:
            begin = start + len(open_tag)
        else:
            prev = lo.rfind(c, 0, end)
            begin = prev + len(close_tag) if prev >= 0 else 0
        return Extracted(Status.complete, text[begin:end])
    return Extracted(Status.missing, None)


def strip_marker(text: str) -> str:
    """``text`` without a leading ``**Environment Observation:**`` line (whitespace around
    it tolerated); the one helper for predictions and ground truths alike."""
    m = _MARKER_LINE.match(text)
    return text[m.end() :] if m else text


def clean_observation(text: str) -> str:
    """An observation as judged: outer blank lines and the marker removed, trailing
    whitespace dropped, leading indentation of the first line kept."""
    return strip_marker(text.strip("\n")).strip("\n").rstrip()


def parse_prediction(raw: str, *, reasoning: str | None = None) -> ParsedPrediction:
    """Parse a world model's raw output. ``reasoning`` is what the server split out, if any."""
    visible, thought = split_reasoning(raw or "", answer_tag=OBS_OPEN)
    if reasoning and thought:
        thought = f"{reasoning.strip()}\n{thought}"
    elif reasoning:
        thought = reasoning.strip() or None
    block = last_block(visible, OBS_OPEN, OBS_CLOSE)
    if block.status is Status.missing:
        text = clean_observation(visible)
        status, obs = (Status.untagged, text) if text.strip() else (Status.missing, None)
        return ParsedPrediction(status, obs, thought, raw or "")
    return ParsedPrediction(block.status, clean_observation(block.text or ""), thought, raw or "")


def with_finish_reason(status: Status, finish_reason: str | None) -> Status:
    """``status`` told apart by why generation ended: an open block the model itself
    stopped in is ``unclosed``; only the token limit (or an unknown reason) truncates."""
    if status is Status.truncated and finish_reason not in (None, "length"):
        return Status.unclosed
    return status


def status_counts(statuses: Iterable[Status | str]) -> dict[str, int]:
    """How many of each status, every status listed (zeros included) in a fixed order."""
    counts = dict.fromkeys((s.value for s in Status), 0)
    for s in statuses:
        key = str(s) or Status.missing.value
        counts[key] = counts.get(key, 0) + 1
    return counts


# -- judge output -------------------------------------------------------------------
_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?|\n?\s*```\s*$")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w-]*)(\s*:)")
_LEADING_NUMBER = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class ParsedJudgement:
    status: Status
    """``complete`` (closed block), ``truncated`` (unclosed tag), ``untagged`` (JSON
    found without the tag) or ``missing`` (no readable object)."""
    data: dict[str, Any] | None
    error: str | None
    raw: str

    @property
    def ok(self) -> bool:
        return self.data is not None


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pyish = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", text)))
        return ast.literal_eval(pyish)


def repair_json(text: str) -> Any:
    """Parse JSON that a model wrote: code fences, trailing commas, comments, single quotes,
    Python literals, unquoted keys. Raises ``ValueError`` when nothing works."""
    body = _FENCE.sub("", text.strip()).strip()
    # Keep only the outermost object when prose surrounds it.
    first, last = body.find("{"), body.rfind("}")
    if first >= 0 and last > first:
        body = body[first : last + 1]
    fixed = _TRAILING_COMMA.sub(r"\1", _LINE_COMMENT.sub("", body))
    # Quoting bare keys can damage a string value that contains ", word:", so it is
    # tried only after the readings that cannot.
    keyed = _BARE_KEY.sub(r'\1"\2"\3', fixed)
    error: Exception | None = None
    for candidate in (body, fixed, keyed):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = error or exc
    for candidate in (fixed, keyed):
        try:
            return _literal(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    raise ValueError(f"not JSON even after repair: {error}")


def parse_judgement(raw: str) -> ParsedJudgement:
    """The judge's verdict object: the last ``<final_evaluation>`` block (reasoning
    removed), else what follows an unclosed tag, else a JSON object in the text."""
    raw = raw or ""
    visible, _ = split_reasoning(raw, answer_tag=EVAL_OPEN)
    block = last_block(visible, EVAL_OPEN, EVAL_CLOSE)
    status, body = block.status, block.text
    if status is Status.missing:
        status, body = Status.untagged, visible
    if "{" not in (body or ""):
        return ParsedJudgement(Status.missing, None, f"no JSON object ({'no <final_evaluation> block' if block.text is None else 'empty block'})", raw)
    try:
        data = repair_json(body or "")
    except ValueError as exc:
        return ParsedJudgement(Status.missing, None, str(exc), raw)
    if not isinstance(data, dict):
        return ParsedJudgement(Status.missing, None, f"expected a JSON object, got {type(data).__name__}", raw)
    return ParsedJudgement(status, data, None, raw)


def parse_score(value: Any) -> int:
    """A judge's score as an integer 1-5, or 0 when it is no number at all.

    Numbers and numeric strings (``"4"``, ``"4/5"``: the leading number) are read,
    rounded with Python's ``round`` (half to even, as a Python judge parser does:
    2.5 -> 2, 3.5 -> 4) and clamped to [1, 5]. Booleans, NaN and non-numbers are 0.
    """
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, str):
        m = _LEADING_NUMBER.match(value)
        if not m:
            return 0
        value = float(m.group(1))
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return min(SCORE_MAX, max(SCORE_MIN, round(value)))


def verdict_scores(data: dict[str, Any], dimensions: Iterable[str]) -> dict[str, int]:
    """Per-dimension scores of a verdict object (nested under ``scores`` or flat, keys in
    any case); a dimension the verdict lacks is 0 (invalid) on its own."""
    scores = data.get("scores") if isinstance(data.get("scores"), dict) else data
    lowered = {str(k).strip().lower(): v for k, v in scores.items()}
    return {d: parse_score(lowered.get(d)) for d in dimensions}
