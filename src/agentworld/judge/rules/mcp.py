"""MCP tool results: JSON with the same keys the real server returns."""

from __future__ import annotations

import re
from typing import Any

from agentworld.domains.presented import tool_call
from agentworld.judge.rules._common import (
    DomainRules,
    action_values,
    altered_session_values,
    flatten_json,
    key_value_facts,
    parse_json,
    session_text,
    shape_similarity,
    text_lines,
)


def _keys(value: Any) -> set[str]:
    """Top-level keys plus the keys of content items (``content[].type``...)."""
    if not isinstance(value, dict):
        return set()
    keys = set(value)
    for item in value.get("content", []) if isinstance(value.get("content"), list) else []:
        if isinstance(item, dict):
            keys |= {f"content[].{k}" for k in item}
    return keys


def _leaves(text: str) -> set[str]:
    """Scalar JSON values (text payloads holding JSON read as JSON too), minus the
    protocol's own markers (content item types, booleans), which say nothing of state."""
    return {
        v for k, v in key_value_facts(text).items()
        if not k.endswith("type") and v not in ("true", "false", "null")
    }


_TOOL_ERROR = re.compile(r"Error executing tool ([\w.-]+)")


def _fields(value: Any) -> dict[str, Any]:
    """Scalar fields anywhere in a JSON value, by key (the first occurrence wins)."""
    out: dict[str, Any] = {}
    stack = [value]
    while stack:
        v = stack.pop(0)
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, (dict, list)):
                    stack.append(x)
                elif k not in out:
                    out[k] = x
        elif isinstance(v, list):
            stack.extend(v)
    return out


def _payload_fields(text: str) -> dict[str, Any]:
    """Fields of a result and of the JSON its text items carry."""
    data = parse_json(text)
    fields = _fields(data)
    items = data.get("content") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            inner = parse_json(item["text"])
            if isinstance(inner, (dict, list)):
                fields = {**_fields(inner), **fields}
    return fields


class McpRules(DomainRules):
    name = "mcp"
    typed_kinds = True

    def kind(self, text: str, sample: Any) -> str:
        """A tool result (an error one apart), other JSON, or text that is no result."""
        if not text.strip():
            return "empty"
        data = parse_json(text)
        if isinstance(data, dict) and ("content" in data or "isError" in data):
            return "error result" if data.get("isError") else "result"
        return "other json" if data is not None else "text"

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        call = tool_call(sample.action)
        named = _TOOL_ERROR.search(pred)
        if call and named and named.group(1) != call[0]:
            return f"an error of tool {named.group(1)!r}, the call is {call[0]!r}"
        return None

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        t = parse_json(truth)
        if t is None:
            shape = shape_similarity(pred, truth)
            return shape, {"truth_json": False, "shape": round(shape, 3)}
        p = parse_json(pred)
        if p is None:
            return 0.0, {"valid_json": False}
        if type(p) is not type(t):
            return 0.25, {"valid_json": True, "same_type": False}
        tk, pk = _keys(t), _keys(p)
        jac = len(tk & pk) / len(tk | pk) if tk | pk else 1.0
        # Valid JSON of the right type earns half; the rest is having the same keys.
        return 0.5 + 0.5 * jac, {"valid_json": True, "key_jaccard": round(jac, 3)}

    def determined(self, sample: Any) -> list[str]:
        """JSON leaf values of the real result that an earlier action or observation already
        states (stored data read back), plus the call's argument values the result
        repeats (paths, names, ids)."""
        truth = parse_json(sample.ground_truth)
        if truth is None:
            return super().determined(sample)
        known = session_text(sample)
        leaves = _leaves(sample.ground_truth)
        units = [v for v in sorted(leaves) if len(v) >= 3 and v in known]
        for value in action_values(sample.action):
            if value not in units and any(value in leaf for leaf in leaves):
                units.append(value)
        return units

    def found(self, unit: str, pred: str) -> bool:
        # Values sit inside JSON strings, escaped; compare against the decoded leaves.
        return any(unit in leaf for leaf in _leaves(pred)) or super().found(unit, pred)

    def units(self, text: str) -> list[str]:
        """``key=value`` per scalar leaf; multi-line text payloads count line by line."""
        data = parse_json(text)
        if data is None:
            return super().units(text)
        out = []
        for key, value in flatten_json(data).items():
            if key.endswith("type"):
                continue
            out.extend(text_lines(value) if "\n" in value else [f"{key}={value}"])
        return out

    def contradictions(self, pred: str, sample: Any) -> list[str]:
        out = self.history_contradictions(pred, sample)
        t, p = parse_json(sample.ground_truth), parse_json(pred)
        # A call the server rejects must not be reported as a success, and vice versa.
        if (isinstance(t, dict) and isinstance(p, dict) and "isError" in t and "isError" in p
                and bool(t["isError"]) != bool(p["isError"])):
            out.append(f"isError {p['isError']} but the call {'fails' if t['isError'] else 'succeeds'}")
        # A field the call sets (thoughtNumber, path, max_count) that the result echoes
        # must keep the call's value.
        call = tool_call(sample.action)
        said: set[str] = set()
        if call and t is not None and p is not None:
            theirs, mine = _payload_fields(sample.ground_truth), _payload_fields(pred)
            for key, value in _fields(call[1]).items():
                if key in theirs and key in mine and theirs[key] == value and mine[key] != value:
                    out.append(f"{key}: {mine[key]!r} but the call sets {value!r}")
                    said.add(str(value).lower())
        # Values of the session changed in a copied unit, unless named above already.
        out += [c for c in altered_session_values(self.units(pred), self.units(sample.ground_truth), sample)
                if c.split("'")[1] not in said]
        return out


RULES = McpRules()
