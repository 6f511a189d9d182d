"""Reading JSON tool-call actions: ``{"name": ..., "arguments": {...}}``.

Two readers share one notion of a call:

- :func:`parse_tool_call` is strict. Environments execute what it returns, so it refuses
  anything but the canonical shape and says why through :class:`ToolCallError`'s ``kind``;
  each environment maps the kind to its own agent-facing wording (recorded in shipped
  trajectories, so the wording lives with the environment, not here).
- :func:`read_tool_call` is lenient. Analysis code (ledgers, verifiers, filters) reads
  calls written by many agents and models, so it also accepts the alias keys they use
  (``tool``/``tool_name``, ``args``/``input``, OpenAI's ``function`` object).

Arguments may be a JSON string, as OpenAI sends them; an empty string means no arguments.
"""

from __future__ import annotations

import json
from typing import Any, Literal

ErrorKind = Literal["not_json", "not_a_call", "arguments_not_json", "arguments_not_object"]

_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "args", "input")


class ToolCallError(ValueError):
    """Why an action is not a strict tool call.

    ``msg``, ``lineno`` and ``colno`` are those of the JSON decoding error for the
    ``not_json`` and ``arguments_not_json`` kinds, else empty/None.
    """

    def __init__(self, kind: ErrorKind, detail: str, *, msg: str = "",
                 lineno: int | None = None, colno: int | None = None):
        super().__init__(f"{kind}: {detail}")
        self.kind: ErrorKind = kind
        self.msg = msg
        self.lineno = lineno
        self.colno = colno

    @classmethod
    def from_decode(cls, kind: ErrorKind, what: str, exc: json.JSONDecodeError) -> ToolCallError:
        return cls(kind, f"{what} is not JSON ({exc.msg} at column {exc.colno})",
                   msg=exc.msg, lineno=exc.lineno, colno=exc.colno)


def decode_arguments(raw: Any) -> Any:
    """Arguments as sent: a JSON string is decoded (``""`` is ``{}``), anything else returned as is.

    Raises :class:`ToolCallError` (``arguments_not_json``) when a string is not JSON.
    """
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolCallError.from_decode("arguments_not_json", "arguments", exc) from None


def parse_tool_call(action: str) -> tuple[str, dict[str, Any]]:
    """``(name, arguments)`` of a canonical JSON tool call; :class:`ToolCallError` otherwise."""
    try:
        call = json.loads(action)
    except json.JSONDecodeError as exc:
        raise ToolCallError.from_decode("not_json", "action", exc) from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ToolCallError("not_a_call", 'expected {"name": <tool name>, "arguments": {...}}')
    args = decode_arguments(call.get("arguments", {}))
    if not isinstance(args, dict):
        raise ToolCallError("arguments_not_object", f"arguments is a {type(args).__name__}, not an object")
    return call["name"], args


def call_name(call: dict[str, Any]) -> str | None:
    """The tool name of one call object under any of the accepted keys, or None."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = next((call[k] for k in _NAME_KEYS if call.get(k)), None) or fn.get("name")
    return str(name) if name else None


def read_tool_call(action: Any) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a tool call in any of the accepted shapes, or None.

    Arguments come from the first non-empty of ``arguments``/``args``/``input`` (or the
    ``function`` object's ``arguments``); a string that is not JSON is kept as
    ``{"input": <string>}`` so the text stays readable; arguments that are not an
    object make the action not a call.
    """
    try:
        call = json.loads(action)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(call, dict) or not (name := call_name(call)):
        return None
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    raw = next((call[k] for k in _ARGUMENT_KEYS if call.get(k)), None) or fn.get("arguments") or {}
    try:
        args = decode_arguments(raw)
    except ToolCallError:
        args = {"input": raw}
    return (name, args) if isinstance(args, dict) else None
