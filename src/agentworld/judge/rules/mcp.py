"""MCP tool results: JSON with the same keys the real server returns."""

from __future__ import annotations

from typing import Any

from agentworld.judge.rules._common import DomainRules, parse_json, shape_similarity


def _keys(value: Any) -> set[str]:
    """Top-level keys plus the keys of content items (``content[].type``...)."""
    if not isinstance(value, dict):
        return set()
    keys = set(value)
    for item in value.get("content", []) if isinstance(value.get("content"), list) else []:
        if isinstance(item, dict):
            keys |= {f"content[].{k}" for k in item}
    return keys


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

    def contradictions(self, pred: str, sample: Any) -> list[str]:
        out = super().contradictions(pred, sample)
        t, p = parse_json(sample.ground_truth), parse_json(pred)
        # A call the server rejects must not be reported as a success, and vice versa.
        if isinstance(t, dict) and isinstance(p, dict) and "isError" in t and "isError" in p:
            if bool(t["isError"]) != bool(p["isError"]):
                out.append(f"isError {p['isError']} but the call {'fails' if t['isError'] else 'succeeds'}")
        return out


RULES = McpRules()
