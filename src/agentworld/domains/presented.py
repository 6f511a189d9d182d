"""The action inside a user turn, as published AgentWorldBench records present it.

Published user turns frame the action in markdown: a turn header, optionally the current
state, then the action under an ``**Action:**`` label in a fenced block::

    ### Turn 3
    **Action:**
    ```json
    [{"keystrokes": "ls -la\\n", "duration": 0.5}]
    ```

Records we write, trajectories and live agents send the bare action. Everything that
reads an action (the rule scorer, the retrieval floor, the ledger, masking, the
simulator) reads it through :func:`action_of`, so both forms mean the same action. The
frame is the same in every domain; each domain's structured form is read from the bare
text by its own parser (terminal keystrokes: :func:`agentworld.domains.terminal.keys.read_batches`;
tool calls: :func:`tool_call`).

Text that does not start with a frame (a header, an action or state label, a fence) is a
bare action and comes back unchanged, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentworld.tool_calls import read_tool_call

# Header, labels and fences are matched on whole lines; bold (``**``) and heading (``#``)
# markup and a trailing colon are optional where a renderer would show the same words.
_HEADER = re.compile(
    r"(?:#{1,6}[ \t]*)?(?:\*\*)?Turn[ \t]+(?P<n>\d+)(?:[ \t]*(?:/|of)[ \t]*\d+)?[ \t]*:?[ \t]*(?:\*\*)?[ \t]*:?", re.I)
# A label is a heading (``### Action``, ``### Action:``), bold (``**Action:**``,
# ``**Action**:``) or a word and a colon (``Action:``); what follows on its line is the
# start of its section. The word ends there, so "Actions are...", "### Action space" or
# "action = f()" (a bare program) is no label.
_LABEL = (r"(?:#{{1,6}}[ \t]*(?:\*\*)?{w}\b(?:\*\*)?[ \t]*(?::(?:\*\*)?|$)"
          r"|\*\*{w}\b[ \t]*(?::[ \t]*\*\*|\*\*[ \t]*:?)|{w}\b:)")
_ACTION = re.compile(r"[ \t]*" + _LABEL.format(w=r"(?:Agent(?:'s)?[ \t]+)?Action") + r"[ \t]*(?P<rest>.*)", re.I)
_STATE = re.compile(r"[ \t]*" + _LABEL.format(w=r"(?:Current[ \t]+)?(?:State|Screen|Environment[ \t]+State)")
                    + r"[ \t]*(?P<rest>.*)", re.I)
_FENCE = re.compile(r"(?P<indent> {0,3})(?P<mark>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*")
_INLINE = re.compile(r"`(?P<code>[^`\n]+)`")
# How a frame can start (a superset of the above): anything else is bare, read no further.
_START = re.compile(r"\s*(?:#|\*\*|`{3}|~{3}|(?:Turn|Action|Agent|Current|State|Screen|Environment)\b)", re.I)

STATE_LABEL = "**Current State:**"
ACTION_LABEL = "**Action:**"
FENCE_LANGUAGES = {"os": "python", "web": "python"}
"""The fence's language tag per domain when presenting an action (default ``json``)."""


@dataclass(frozen=True)
class PresentedAction:
    """A user turn read: the bare action and what framed it."""

    action: str
    """The bare action text (the user turn itself when it is not framed)."""
    framed: bool = False
    turn: int | None = None
    """The header's turn number, when the turn has a header."""
    state: str | None = None
    """The current-state section's text (its label removed), when there is one."""
    fence: str | None = None
    """The fence's language tag (``json``, ``python``; ``""`` unlabelled), or None: not fenced."""


def _fence_open(line: str) -> re.Match[str] | None:
    m = _FENCE.fullmatch(line)
    # A backtick fence's info string holds no backtick (CommonMark); "```x```" is inline code.
    return m if m and not (m.group("mark")[0] == "`" and "`" in m.group("info")) else None


def _fence_end(lines: list[str], start: int) -> int:
    """The index of the line that closes the fence opened at ``start`` (CommonMark: the
    same character, at least as long, nothing after it), or ``len(lines)`` if none does."""
    mark = _fence_open(lines[start]).group("mark")  # type: ignore[union-attr]
    close = re.compile(rf" {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*")
    return next((j for j in range(start + 1, len(lines)) if close.fullmatch(lines[j])), len(lines))


def _top_level(lines: list[str], start: int) -> list[tuple[int, int]]:
    """``(open, close)`` line indexes of the fenced blocks from ``start`` on, not nested."""
    blocks, i = [], start
    while i < len(lines):
        if _fence_open(lines[i]):
            end = _fence_end(lines, i)
            blocks.append((i, end))
            i = end + 1
        else:
            i += 1
    return blocks


def _first_label(lines: list[str], start: int) -> int | None:
    """The first action label line from ``start`` on outside a fenced block."""
    inside = {j for i, end in _top_level(lines, start) for j in range(i, min(end, len(lines) - 1) + 1)}
    return next((j for j in range(start, len(lines)) if j not in inside and _ACTION.fullmatch(lines[j])), None)


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _state_text(lines: list[str]) -> str | None:
    lines = _trim(lines)
    if lines and (m := _STATE.fullmatch(lines[0])):
        lines = _trim([m.group("rest"), *lines[1:]])
    return "\n".join(lines) if lines else None


def _action_text(lines: list[str]) -> tuple[str, str | None]:
    """The action under its label: a fenced block's content (what follows its closing
    fence is not the action), inline code's, or the text itself; and the fence's tag."""
    lines = _trim(lines)
    if lines and (m := _fence_open(lines[0])):
        end = _fence_end(lines, 0)
        indent = len(m.group("indent"))
        # CommonMark: content lines lose up to the opening fence's indentation.
        body = [ln[min(indent, len(ln) - len(ln.lstrip(" "))):] for ln in lines[1:end]]
        return "\n".join(body), m.group("info").split(" ", 1)[0] if m.group("info") else ""
    text = "\n".join(lines).strip()
    if m := _INLINE.fullmatch(text):
        return m.group("code"), None
    return text, None


def read_presented(text: str) -> PresentedAction:
    """Read a user turn in the published presentation, or bare (see the module doc).

    Lenient as a reader of many writers' text must be: CRLF line ends, blank lines
    anywhere, ``#`` to ``######`` headers (or none), ``**Action:**``/``**Action**:``/
    ``### Action``/``Action:`` labels (or none, when a fence follows the header), fences of
    backticks or tildes with any language tag or none, inline code."""
    if not _START.match(text):
        return PresentedAction(text)
    norm = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = norm.split("\n")
    i = next((j for j, ln in enumerate(lines) if ln.strip()), len(lines))
    if i == len(lines):
        return PresentedAction(text)
    turn = None
    if m := _HEADER.fullmatch(lines[i].strip()):
        turn, i = int(m.group("n")), i + 1
    label = _first_label(lines, i)
    if label is not None:
        m = _ACTION.fullmatch(lines[label])
        action, fence = _action_text([m.group("rest"), *lines[label + 1:]])  # type: ignore[union-attr]
        return PresentedAction(action, True, turn, _state_text(lines[i:label]), fence)
    blocks = _top_level(lines, i)
    starts_framed = turn is not None or _STATE.fullmatch(lines[i] if i < len(lines) else "") or (
        blocks and blocks[0][0] == next((j for j in range(i, len(lines)) if lines[j].strip()), -1))
    if not starts_framed:
        return PresentedAction(text)
    if blocks:
        # No label: the last fenced block is the action, what comes before it the state.
        start, end = blocks[-1]
        action, fence = _action_text(lines[start:end + 1])
        return PresentedAction(action, True, turn, _state_text(lines[i:start]), fence)
    action, fence = _action_text(lines[i:])
    return PresentedAction(action, True, turn, None, fence)


def action_of(text: str) -> str:
    """The bare action of a user turn, presented or bare (bare text comes back as is)."""
    return read_presented(text).action


def tool_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of the tool call a user turn carries, presented or bare, read
    leniently (:func:`agentworld.tool_calls.read_tool_call`): mcp, swe and search."""
    return read_tool_call(action_of(text))


def present(action: str, domain: str, *, turn: int | None = None, state: str | None = None) -> str:
    """``action`` as published records present it: ``### Turn N`` (when ``turn`` is
    given), the current state (when given), ``**Action:**`` and a fence tagged with the
    domain's language. ``action_of`` reads it back: ``action_of(present(a, d)) == a`` for
    every action that neither starts nor ends with a line break."""
    runs = [len(m.group(1)) for m in re.finditer(r"(?m)^ {0,3}(`{3,})", action)]
    mark = "`" * max(3, *(n + 1 for n in runs)) if runs else "```"
    parts = [f"### Turn {turn}"] if turn is not None else []
    if state:
        parts += [STATE_LABEL, state]
    parts += [ACTION_LABEL, f"{mark}{FENCE_LANGUAGES.get(domain, 'json')}", action, mark]
    return "\n".join(parts)


__all__ = ["ACTION_LABEL", "STATE_LABEL", "PresentedAction", "action_of", "present", "read_presented", "tool_call"]
