"""Web pages: a URL/title/tabs header, then the accessibility tree ``[bid] role 'name'``."""

from __future__ import annotations

import re
from typing import Any

from agentworld.judge.rules._common import DomainRules, mentions, session_text, shape_similarity

NODE = re.compile(r"^(\s*)\[([^\]]+)\]\s+(\w[\w-]*)")
ANY_NODE = re.compile(r"^\s*(\[[^\]]+\]\s+)?[A-Za-z][\w-]*\s+'")
"""A tree line: a role and its quoted name, with an element id or without (StaticText)."""
_HEADER = ("URL:", "Title:", "Tabs:", "Focused:", "Scroll:")
_URL = re.compile(r"^URL:\s*(\S+)", re.M)
_QUOTE = re.compile(r"(?<!\\)'")
_TABS = re.compile(r"(?:^Tabs:|,)\s*\[(\d+)\]\s+'", re.M)
_SCROLL = re.compile(r"^Scroll: x=(\d+) y=(\d+) of page (\d+)x(\d+), viewport (\d+)x(\d+)", re.M)
_TYPED = re.compile(r"""^\s*(?:(?:fill|select_option)\(\s*(['"]).*?\1\s*,|keyboard_type\()\s*(['"])(.+)\2\s*\)\s*$""")


def nesting_breaks(lines: list[str], step: int) -> list[str]:
    """Tree lines indented more than one level (``step`` characters) below the line
    before: a node under no parent, which no accessibility tree has."""
    out, prev = [], None
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if prev is not None and indent > prev + step:
            out.append(f"nested under nothing: {line.strip()[:50]!r}")
        prev = indent
    return out


def cut_lines(lines: list[str]) -> list[str]:
    """Lines with an unclosed quote: a name or value cut off mid-way."""
    return [f"cut off: {x.strip()[:50]!r}" for x in lines if len(_QUOTE.findall(x)) % 2]


def typed_values(action: str) -> list[str]:
    """Text an action types or picks (``fill``, ``keyboard_type``, ``select_option``):
    not element ids, which say nothing of what a page shows."""
    m = _TYPED.match(action)
    return [m.group(3)] if m and len(m.group(3).strip()) >= 3 else []


def page_url(text: str) -> str | None:
    """The URL line of a browser observation (None without one)."""
    m = _URL.search(text)
    return m.group(1) if m else None


def tree_nodes(text: str) -> dict[str, str]:
    """Element id -> role for every tree line."""
    return {m.group(2): m.group(3) for line in text.splitlines() if (m := NODE.match(line))}


def tree_fraction(pred: str, truth: str, node: re.Pattern[str], header: tuple[str, ...],
                  shape_weight: float = 0.25) -> tuple[float, dict[str, Any]]:
    """Shared by tree-shaped domains: header lines kept, every other line a tree node;
    ``shape_weight`` of the score goes to line shapes like the truth's."""
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
    rest = 1.0 - shape_weight
    frac = rest / 3 * header_ok + 2 * rest / 3 * node_ok + shape_weight * shape
    return frac, {"header": round(header_ok, 3), "node_lines": round(nodes, 3), "shape": round(shape, 3)}


class WebRules(DomainRules):
    name = "web"
    screens = True

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        # The header, then tree lines. Which nodes a page has is its content, not its
        # layout: another page's tree is laid out alike.
        return tree_fraction(pred, truth, ANY_NODE, _HEADER, shape_weight=0.0)

    def facts(self, text: str) -> dict[str, str]:
        # An element id keeps its role across pages of one session.
        return {f"[{bid}]": role for bid, role in tree_nodes(text).items()}

    def kind(self, text: str, sample: Any) -> str:
        # A browser prints a page state (the URL header, the tree), after an error line
        # when the action failed; other text is no browser output.
        kind = super().kind(text, sample)
        if kind == "output" and page_url(text) is None and "RootWebArea" not in text:
            return "text"
        return kind

    def malformed(self, text: str, sample: Any) -> list[str]:
        # The tree hangs under RootWebArea (an error message and its call log come first).
        _, root, tree = text.partition("RootWebArea")
        lines = ("RootWebArea" + tree).splitlines() if root else text.splitlines()
        return (nesting_breaks(lines, 1) + cut_lines(text.splitlines()))[:3]

    def impossible(self, text: str, sample: Any) -> list[str]:
        """A header the browser cannot print: tabs not numbered 0, 1, ... in order, a
        scroll position below the page's end, numbers with a leading zero."""
        out = super().impossible(text, sample)
        header = "\n".join(x for x in text.splitlines() if x.startswith(("Tabs:", "Scroll:")))
        tabs = [int(m) for m in _TABS.findall(header)]
        if tabs and tabs != list(range(len(tabs))):
            out.append(f"tabs numbered {tabs[:4]}")
        if m := _SCROLL.search(text):
            x, y, page_w, page_h, _, _ = (int(g) for g in m.groups())
            if y > page_h or x > page_w or any(len(g) > 1 and g.startswith("0") for g in m.groups()):
                out.append(m.group(0)[:60])
        return out

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        # Where the browser is after an action is often fixed by the session: the page it
        # stays on (typing, scrolling), the url of the link clicked, the page go_back
        # returns to, the start page. A page at another URL answers another action.
        want, got = page_url(sample.ground_truth), page_url(pred)
        if want and got != want and want in session_text(sample):
            return f"the page at {got or 'no URL'!r}, where the session leads to {want!r}"
        # Text the agent typed earlier that the real page still shows (the query of a
        # search it ran, a form's fields): a page without it answers another session.
        typed = [v for a, _ in sample.history() for v in typed_values(a) if mentions(sample.ground_truth, v)]
        if typed and not any(mentions(pred, v) for v in typed):
            return f"none of the text the session typed ({typed[0][:40]!r}...)"
        return None


RULES = WebRules()
