"""Android screens: an HTML-like view hierarchy with ids, classes and flags."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from agentworld.judge.rules._common import DomainRules

_VOID = {"img", "input", "br", "hr", "meta", "link"}


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.ids: dict[str, str] = {}
        self.errors = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if a.get("id") is not None:
            self.ids[str(a["id"])] = a.get("class") or tag
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.errors += 1


def parse_tree(text: str) -> _Tree:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    return tree


class AndroidRules(DomainRules):
    name = "android"

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        t, p = parse_tree(truth), parse_tree(pred)
        if not t.tags:
            return super().format_fraction(pred, truth, sample)
        if not p.tags:
            return 0.0, {"tags": 0}
        balanced = 1.0 if not p.errors and not p.stack else 0.0
        tt, pt = set(t.tags), set(p.tags)
        vocab = len(tt & pt) / len(tt | pt)
        with_ids = sum(1 for _ in p.ids) / max(1, len(p.tags))
        truth_ids = sum(1 for _ in t.ids) / max(1, len(t.tags))
        ids_ok = min(1.0, with_ids / truth_ids) if truth_ids else 1.0
        frac = 0.4 * balanced + 0.3 * vocab + 0.3 * ids_ok
        return frac, {"balanced": bool(balanced), "tag_jaccard": round(vocab, 3), "ids": round(ids_ok, 3)}

    def facts(self, text: str) -> dict[str, str]:
        # A view id keeps its class while the same screen is shown.
        return {f"#{k}": v for k, v in parse_tree(text).ids.items()}


RULES = AndroidRules()
