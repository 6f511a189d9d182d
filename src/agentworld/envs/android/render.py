"""A view hierarchy as the android domain's observation: HTML-like nested elements.

One element per line, indented two spaces a level. Each element has an ``id`` (its index
on this screen, which ``{"action": "tap", "element": id}`` refers to) and the view's short
``class``; the tag says what the view is for a reader:

====================  =========================================================
tag                   views
====================  =========================================================
``input`` (void)      editable text (``EditText`` and kin): ``value``, ``hint``
``button``            buttons, checkable widgets, clickable views
``img`` (void)        images that are not clickable
``p``                 text views that are not clickable
``div``               everything else (layouts and containers)
====================  =========================================================

Attributes, in this order and only when they say something: ``id``, ``class``,
``resource-id`` (without its package prefix), ``description`` (content description),
``hint``, ``value``, ``package`` (top-level elements only), the flags ``clickable``,
``long-clickable``, ``checked`` (``true``/``false`` on checkable views), ``focused``,
``selected``, ``scrollable``, ``password``, ``enabled="false"``, and ``bounds``
(``[left,top][right,bottom]`` as uiautomator writes it). Text goes between the tags.

``compact`` (the default) leaves out what a reader cannot see or use: views hidden from
the user or without area, and layout wrappers with one child and nothing of their own
(their child takes their place), and empty decoration leaves.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from agentworld.envs.android.hierarchy import Screen, ViewNode

VOID_TAGS = frozenset({"input", "img"})
"""Tags written without a closing tag (``<img .../>``)."""

_EDITABLE = ("EditText", "AutoCompleteTextView", "SearchAutoComplete")


@dataclass(frozen=True)
class Element:
    """A rendered element: its id and the view behind it."""

    id: int
    tag: str
    node: ViewNode


@dataclass(frozen=True)
class Rendering:
    """What a screen renders to: the observation text and the element table."""

    text: str
    elements: list[Element]

    def element(self, index: int) -> Element | None:
        return self.elements[index] if 0 <= index < len(self.elements) else None

    def element_at(self, x: int, y: int) -> Element | None:
        """The smallest element whose bounds hold the point (the one a tap there hits
        most likely), or None."""
        hits = [e for e in self.elements if e.node.bounds is not None
                and e.node.bounds[0] <= x < e.node.bounds[2] and e.node.bounds[1] <= y < e.node.bounds[3]]
        return min(hits, key=lambda e: _area(e.node), default=None)


def _area(node: ViewNode) -> int:
    b = node.bounds or (0, 0, 0, 0)
    return (b[2] - b[0]) * (b[3] - b[1])


def tag_of(node: ViewNode) -> str:
    sc = node.short_class
    if any(k in sc for k in _EDITABLE):
        return "input"
    interactive = node.flag("clickable") or node.flag("checkable")
    if "Button" in sc or "Switch" in sc or "CheckBox" in sc or interactive:
        return "button"
    if "Image" in sc and not node.children:
        return "img"
    if "Text" in sc and not node.children:
        return "p"
    return "div"


def _shown(node: ViewNode) -> bool:
    if not node.visible:
        return False
    b = node.bounds
    return b is None or (b[2] > b[0] and b[3] > b[1])


def _own(node: ViewNode) -> bool:
    """Whether the view itself says or does something (not only holds children)."""
    return bool(node.text or node.desc or node.hint) or any(
        node.flag(f) for f in ("clickable", "long-clickable", "checkable", "scrollable", "focused", "selected"))


def _compact(node: ViewNode) -> list[ViewNode]:
    """The views that stand for ``node`` in compact form (none, itself, or its only child)."""
    if not _shown(node):
        return []
    kids = [k for child in node.children for k in _compact(child)]
    if not _own(node):
        if len(kids) == 1:
            return kids
        if not kids and not node.resource_id:
            return []
    copy = ViewNode(**{**node.__dict__, "children": kids})
    return [copy]


def _attrs(node: ViewNode, idx: int, tag: str, top: bool) -> str:
    parts: list[tuple[str, str]] = [("id", str(idx)), ("class", node.short_class)]
    if node.resource_id:
        parts.append(("resource-id", node.resource_id.split(":id/", 1)[-1]))
    if node.desc:
        parts.append(("description", node.desc))
    if node.hint:
        parts.append(("hint", node.hint))
    if tag == "input" and node.text:
        parts.append(("value", node.text))
    if top and node.package:
        parts.append(("package", node.package))
    for flag in ("clickable", "long-clickable"):
        if node.flag(flag):
            parts.append((flag, "true"))
    if node.flag("checkable"):
        parts.append(("checked", "true" if node.flag("checked") else "false"))
    for flag in ("focused", "selected", "scrollable", "password"):
        if node.flag(flag):
            parts.append((flag, "true"))
    if not node.flag("enabled"):
        parts.append(("enabled", "false"))
    if node.bounds is not None:
        left, t, r, b = node.bounds
        parts.append(("bounds", f"[{left},{t}][{r},{b}]"))
    return " ".join(f'{k}="{_esc(v)}"' for k, v in parts)


def _esc(text: str) -> str:
    # One element per line: a newline inside text is written as a character reference.
    return html.escape(text, quote=True).replace("\r\n", "&#10;").replace("\n", "&#10;")


def render(screen: Screen, *, compact: bool = True) -> Rendering:
    """The screen as HTML-like text, and the element behind each id."""
    roots = [k for r in screen.roots for k in _compact(r)] if compact else list(screen.roots)
    lines: list[str] = []
    elements: list[Element] = []
    # An explicit stack (no recursion): hierarchies from datasets can be deep.
    stack: list[tuple[ViewNode | None, int, bool, str]] = [(r, 0, True, "") for r in reversed(roots)]
    while stack:
        node, depth, top, closing = stack.pop()
        pad = "  " * depth
        if node is None:
            lines.append(f"{pad}</{closing}>")
            continue
        tag = tag_of(node)
        idx = len(elements)
        elements.append(Element(idx, tag, node))
        attrs = _attrs(node, idx, tag, top)
        if tag in VOID_TAGS:
            lines.append(f"{pad}<{tag} {attrs}/>")
            stack.extend((c, depth + 1, False, "") for c in reversed(node.children))  # rare: shown as siblings
            continue
        text = "" if tag == "input" else _esc(node.text)
        if not node.children:
            lines.append(f"{pad}<{tag} {attrs}>{text}</{tag}>")
            continue
        lines.append(f"{pad}<{tag} {attrs}>{text}")
        stack.append((None, depth, False, tag))
        stack.extend((c, depth + 1, False, "") for c in reversed(node.children))
    return Rendering(text="\n".join(lines), elements=elements)
