"""Strict extraction of a model's answer from its raw text.

A prediction is the LAST closed ``<predicted_observation>`` block after every
reasoning block has been removed (closed, unclosed or nested ``<think>``), minus a
leading ``**Environment Observation:**`` marker. An unclosed block is a truncation
and a text without the block is missing: both are reported, never scored as valid.
A judge's verdict is the last ``<final_evaluation>`` block, read as JSON after
repairing the slips judges commonly make.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentworld.prompts import OBS_CLOSE, OBS_OPEN

MARKER = "**Environment Observation:**"
EVAL_OPEN, EVAL_CLOSE = "<final_evaluation>", "</final_evaluation>"
_THINK_TAG = re.compile(r"<(/?)think\s*>", re.IGNORECASE)


class Status(StrEnum):
    complete = "complete"
    truncated = "truncated"
    missing = "missing"


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
        return self.status is Status.complete


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Remove reasoning from ``text``; return ``(visible_text, reasoning)``.

    Nested think blocks count as one block. An unclosed block swallows the rest of the
    text (the model ran out of tokens while thinking). A closing tag with no opening
    one means the template opened the block in the prompt (Qwen3 style): everything
    before it is reasoning.
    """
    visible: list[str] = []
    thought: list[str] = []
    depth = 0
    pos = 0
    for m in _THINK_TAG.finditer(text):
        chunk = text[pos : m.start()]
        closing = m.group(1) == "/"
        if depth == 0 and not closing:
            visible.append(chunk)
            depth = 1
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
    reasoning = "".join(thought).strip() or None
    return "".join(visible), reasoning


def last_block(text: str, open_tag: str, close_tag: str) -> Extracted:
    """The last closed ``open_tag...close_tag`` block, or the unclosed tail, or nothing."""
    lo = text.lower()
    o, c = open_tag.lower(), close_tag.lower()
    end = lo.rfind(c)
    if end >= 0:
        start = lo.rfind(o, 0, end)
        if start >= 0:
            return Extracted(Status.complete, text[start + len(open_tag) : end])
    start = lo.rfind(o)
    if start >= 0 and start > end:
        return Extracted(Status.truncated, text[start + len(open_tag) :])
    return Extracted(Status.missing, None)


def clean_observation(text: str) -> str:
    body = text.strip("\n")
    stripped = body.lstrip()
    if stripped.startswith(MARKER):
        # Drop the marker's own line break (or the spaces after it on the same line).
        body = re.sub(r"^[ \t]*\n?", "", stripped[len(MARKER) :]).strip("\n")
    return body.rstrip()


def parse_prediction(raw: str, *, reasoning: str | None = None) -> ParsedPrediction:
    """Parse a world model's raw output. ``reasoning`` is what the server split out, if any."""
    visible, thought = split_reasoning(raw or "")
    if reasoning and thought:
        thought = f"{reasoning.strip()}\n{thought}"
    elif reasoning:
        thought = reasoning.strip() or None
    block = last_block(visible, OBS_OPEN, OBS_CLOSE)
    obs = clean_observation(block.text) if block.text is not None else None
    return ParsedPrediction(block.status, obs, thought, raw or "")


# -- judge output -------------------------------------------------------------------
_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?|\n?\s*```\s*$")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


@dataclass(frozen=True)
class ParsedJudgement:
    status: Status
    data: dict[str, Any] | None
    error: str | None
    raw: str

    @property
    def ok(self) -> bool:
        return self.status is Status.complete and self.data is not None


def repair_json(text: str) -> Any:
    """Parse JSON that a model wrote: code fences, trailing commas, comments, single quotes,
    Python literals. Raises ``ValueError`` when nothing works."""
    body = _FENCE.sub("", text.strip()).strip()
    # Keep only the outermost object when prose surrounds it.
    first, last = body.find("{"), body.rfind("}")
    if first >= 0 and last > first:
        body = body[first : last + 1]
    attempts = [body]
    fixed = _TRAILING_COMMA.sub(r"\1", _LINE_COMMENT.sub("", body))
    attempts.append(fixed)
    for candidate in attempts:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    # Single quotes and True/False/None: a Python literal is the honest reading.
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        pyish = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", fixed)))
        try:
            return ast.literal_eval(pyish)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"not JSON even after repair: {exc}") from None


def parse_judgement(raw: str) -> ParsedJudgement:
    """Extract the judge's ``<final_evaluation>`` JSON (the last block, reasoning removed)."""
    visible, _ = split_reasoning(raw or "")
    block = last_block(visible, EVAL_OPEN, EVAL_CLOSE)
    if block.text is None:
        return ParsedJudgement(Status.missing, None, "no <final_evaluation> block", raw or "")
    if block.status is Status.truncated:
        return ParsedJudgement(Status.truncated, None, "unclosed <final_evaluation> block", raw or "")
    try:
        data = repair_json(block.text)
    except ValueError as exc:
        return ParsedJudgement(Status.missing, None, str(exc), raw or "")
    if not isinstance(data, dict):
        return ParsedJudgement(Status.missing, None, f"expected a JSON object, got {type(data).__name__}", raw or "")
    return ParsedJudgement(Status.complete, data, None, raw or "")
