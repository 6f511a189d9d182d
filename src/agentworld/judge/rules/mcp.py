"""MCP tool results: JSON with the same keys the real server returns."""

from __future__ import annotations

from typing import Any

from agentworld.judge.rules._common import DomainRules, key_value_facts, parse_json, shape_similarity


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
        """JSON leaf values of the real result (text payloads included, line by line) that
        an earlier action or observation already states: echoed arguments, stored data."""
        if parse_json(sample.ground_truth) is None:
            return super().determined(sample)
        known = "\n".join([*(a + "\n" + o for a, o in sample.history()), sample.action])
        units = []
        for value in _leaves(sample.ground_truth):
            if len(value) >= 3 and value in known and value not in units:
                units.append(value)
        return units

    def found(self, unit: str, pred: str) -> bool:
        return unit in _leaves(pred) or super().found(unit, pred)

    def contradictions(self, pred: str, sample: Any) -> list[str]:
        out = super().contradictions(pred, sample)
        t, p = parse_json(sample.ground_truth), parse_json(pred)
        # A call the server rejects must not be reported as a success, and vice versa.
        if isinstance(t, dict) and isinstance(p, dict) and "isError" in t and "isError" in p:
            if bool(t["isError"]) != bool(p["isError"]):
                out.append(f"isError {p['isError']} but the call {'fails' if t['isError'] else 'succeeds'}")
        return out


RULES = McpRules()
