"""MCP tool results: JSON with the same keys the real server returns."""

from __future__ import annotations

from typing import Any

from agentworld.judge.rules._common import (
    DomainRules,
    action_values,
    flatten_json,
    key_value_facts,
    parse_json,
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


class McpRules(DomainRules):
    name = "mcp"

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
        known = "\n".join([*(a + "\n" + o for a, o in sample.history()), sample.action])
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
        out = super().contradictions(pred, sample)
        t, p = parse_json(sample.ground_truth), parse_json(pred)
        # A call the server rejects must not be reported as a success, and vice versa.
        if (isinstance(t, dict) and isinstance(p, dict) and "isError" in t and "isError" in p
                and bool(t["isError"]) != bool(p["isError"])):
            out.append(f"isError {p['isError']} but the call {'fails' if t['isError'] else 'succeeds'}")
        return out


RULES = McpRules()
