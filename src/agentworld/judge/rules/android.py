"""Android screens: an HTML-like view hierarchy with ids, classes and flags.

Both layouts count: the whole screen on one line, and one element a line, indented
(what ``agentworld.envs.android.render`` writes). Void elements (``img``, ``input``)
may be written ``<img ...>`` or ``<img .../>``; a stray ``</input>`` is tolerated. The
units completeness counts are the elements (a start tag with the text right after it),
whatever the line layout; text is compared unescaped (``&amp;`` is ``&``), so typed text
that the action carries is found in the screen that shows it.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

from agentworld.judge.rules._common import DomainRules, action_values, norm, parse_json

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample

_VOID = {"img", "input", "br", "hr", "meta", "link"}
_ELEMENT = re.compile(r"<[A-Za-z][^<>]*>[^<]*")


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

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <img .../>: one element, nothing left open (the default would also close it).
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        elif tag not in _VOID:
            self.errors += 1


def gesture_values(action: str) -> list[str]:
    """The literal values a gesture carries (typed text, an app name): not its kind
    (``tap``) or direction (``right``), which say nothing of the screen."""
    data = parse_json(action)
    if isinstance(data, dict):
        return [v.strip() for k, v in data.items()
                if k not in ("action", "direction") and isinstance(v, str) and len(v.strip()) >= 3]
    return action_values(action)


def parse_tree(text: str) -> _Tree:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    return tree


class AndroidRules(DomainRules):
    name = "android"
    screens = True

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

    def units(self, text: str) -> list[str]:
        found = [norm(html.unescape(m.group(0))) for m in _ELEMENT.finditer(text)]
        return found or super().units(text)

    def determined(self, sample: BenchSample) -> list[str]:
        kinds = set(action_values(sample.action)) - set(gesture_values(sample.action))
        units = [u for u in super().determined(sample) if u not in kinds]  # not "tap" found in "Tap here"
        truth = html.unescape(sample.ground_truth)
        for value in gesture_values(sample.action):
            if value in truth and value not in units:
                units.append(value)  # typed text, shown escaped in the markup
        return units

    def found(self, unit: str, pred: str) -> bool:
        return super().found(unit, pred) or norm(unit) in norm(html.unescape(pred))

    def answers_action(self, pred: str, sample: BenchSample) -> str | None:
        truth, mine = norm(html.unescape(sample.ground_truth)), norm(html.unescape(pred))
        values = [v for v in gesture_values(sample.action) if norm(v) in truth]
        if values and not any(norm(v) in mine for v in values):
            return f"none of the action's values the real output repeats ({values[0][:40]!r}...)"
        return None


RULES = AndroidRules()
