"""Web pages: a URL/title/tabs header, then the accessibility tree ``[bid] role 'name'``."""

from __future__ import annotations

import re
from typing import Any

from agentworld.judge.rules._common import DomainRules, shape_similarity

NODE = re.compile(r"^(\s*)\[([^\]]+)\]\s+(\w[\w-]*)")
_HEADER = ("URL:", "Title:", "Tabs:")


def tree_nodes(text: str) -> dict[str, str]:
    """Element id -> role for every tree line."""
    return {m.group(2): m.group(3) for line in text.splitlines() if (m := NODE.match(line))}


def tree_fraction(pred: str, truth: str, node: re.Pattern[str], header: tuple[str, ...]) -> tuple[float, dict[str, Any]]:
    """Shared by tree-shaped domains: header lines kept, every other line a tree node."""
    t_lines = [x for x in truth.splitlines() if x.strip()]
    p_lines = [x for x in pred.splitlines() if x.strip()]
    if not p_lines:
        return 0.0, {"lines": 0}
    t_header = {h for h in header if any(x.strip().startswith(h) for x in t_lines)}
    p_header = {h for h in header if any(x.strip().startswith(h) for x in p_lines)}
    header_ok = len(t_header & p_header) / len(t_header | p_header) if t_header | p_header else 1.0
    body = [x for x in p_lines if not x.strip().startswith(header)]
    nodes = sum(bool(node.match(x)) for x in body) / len(body) if body else 0.0
    truth_body = [x for x in t_lines if not x.strip().startswith(header)]
    truth_nodes = sum(bool(node.match(x)) for x in truth_body) / len(truth_body) if truth_body else 0.0
    # Trees in the truth set the bar: a prediction is held to the truth's share of node lines.
    node_ok = min(1.0, nodes / truth_nodes) if truth_nodes else 1.0 - nodes
    shape = shape_similarity(pred, truth)
    frac = 0.25 * header_ok + 0.5 * node_ok + 0.25 * shape
    return frac, {"header": round(header_ok, 3), "node_lines": round(nodes, 3), "shape": round(shape, 3)}


class WebRules(DomainRules):
    name = "web"
    screens = True

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        return tree_fraction(pred, truth, NODE, _HEADER)

    def facts(self, text: str) -> dict[str, str]:
        # An element id keeps its role across pages of one session.
        return {f"[{bid}]": role for bid, role in tree_nodes(text).items()}


RULES = WebRules()
