"""The page's accessibility tree as text, with element ids (``bid``), BrowserGym-style.

Every element gets a ``bid`` attribute (a number, kept while the element lives; new
elements get new numbers), so an action can name an element the way the observation
shows it. The tree is Chromium's own (CDP ``Accessibility.getFullAXTree``); DOM nodes are
matched to it through their backend ids. One node per line, indented by a tab per level:
``[bid] role 'name', property=value, flag``. Ignored and unnamed generic nodes give their
place to their children; text that repeats its parent's name is left out.

Long pages (documentation) are cut to the nodes in the viewport, so scrolling changes
what the tree shows and an observation stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MARK_JS = """() => {
  let next = window.__awNextBid || 1;
  const rects = {};
  const sx = window.scrollX, sy = window.scrollY;
  for (const el of document.querySelectorAll('*')) {
    if (!el.hasAttribute('bid')) { el.setAttribute('bid', String(next)); next += 1; }
    const r = el.getBoundingClientRect();
    if (r.width || r.height) rects[el.getAttribute('bid')] = [Math.round(r.top + sy), Math.round(r.bottom + sy)];
  }
  window.__awNextBid = next;
  const doc = document.documentElement;
  return {rects: rects, scrollX: Math.round(sx), scrollY: Math.round(sy),
          width: doc.scrollWidth, height: doc.scrollHeight, vw: window.innerWidth, vh: window.innerHeight,
          active: document.activeElement && document.activeElement !== document.body
                  ? document.activeElement.getAttribute('bid') : null};
}"""
"""Marks unmarked elements and returns their vertical extents, the scroll state and the focus."""

_SKIP_ROLES = {"none", "InlineTextBox", "LineBreak", "MenuListPopup", "ignored"}
_FLAGS = ("disabled", "required", "readonly", "multiselectable", "modal")
_VALUED = ("checked", "pressed", "expanded", "selected", "level", "valuemin", "valuemax", "url")

MAX_LINES = 300
"""Beyond this many tree lines only the nodes near the viewport are shown."""


@dataclass(frozen=True)
class PageTree:
    text: str
    """The tree lines."""
    focused: str | None
    """The focused element's line (without indentation), or None."""
    scroll: str
    """Scroll position, page and viewport size, and whether the tree was cut to the viewport."""
    bids: frozenset[str]
    """The element ids the tree shows."""


def _backend_bids(dom: dict[str, Any]) -> dict[int, str]:
    """Backend node id -> bid for every marked element of a ``DOM.getDocument`` tree."""
    out: dict[int, str] = {}
    stack = [dom["root"]]
    while stack:
        node = stack.pop()
        attrs = node.get("attributes") or []
        for k, v in zip(attrs[::2], attrs[1::2], strict=False):
            if k == "bid":
                out[node["backendNodeId"]] = v
        stack.extend(node.get("children") or [])
        if node.get("contentDocument"):
            stack.append(node["contentDocument"])
    return out


def _quote(text: str) -> str:
    return "'" + " ".join(text.split()).replace("'", "\\'") + "'"


def _props(node: dict[str, Any]) -> list[str]:
    out = []
    value = (node.get("value") or {}).get("value")
    if value not in (None, ""):
        out.append(f"value={_quote(str(value))}")
    props = {p["name"]: (p.get("value") or {}).get("value") for p in node.get("properties") or []}
    for key in _VALUED:
        v = props.get(key)
        if v is None or v is False or v == "false" and key != "checked":
            continue
        out.append(f"{key}={_quote(str(v).lower() if isinstance(v, bool) else str(v))}")
    out.extend(k for k in _FLAGS if props.get(k) is True)
    if props.get("focused") is True and node["role"].get("value") != "RootWebArea":
        out.append("focused")
    return out


def render(ax: dict[str, Any], dom: dict[str, Any], marks: dict[str, Any]) -> PageTree:
    """The tree text of a page from its CDP accessibility tree, DOM and :data:`MARK_JS` result."""
    nodes = {n["nodeId"]: n for n in ax["nodes"]}
    bids = _backend_bids(dom)
    rects: dict[str, list[int]] = marks["rects"]
    root = next((n for n in ax["nodes"] if not n.get("parentId")), None)
    top, bottom = marks["scrollY"], marks["scrollY"] + marks["vh"]

    def walk(cut: bool) -> list[tuple[int, str, str | None]]:
        lines: list[tuple[int, str, str | None]] = []

        def visit(node_id: str, depth: int, parent_name: str) -> None:
            node = nodes.get(node_id)
            if node is None:
                return
            role = (node.get("role") or {}).get("value", "")
            name = str((node.get("name") or {}).get("value") or "")
            bid = bids.get(node.get("backendDOMNodeId", -1))
            rect = rects.get(bid or "")
            if cut and rect is not None and (rect[1] < top or rect[0] > bottom):
                return  # outside the viewport, with everything inside it
            shown = not node.get("ignored") and role not in _SKIP_ROLES and not (role == "generic" and not name)
            if role == "StaticText" and (not name.strip() or " ".join(name.split()) in " ".join(parent_name.split())):
                shown = False
            child_depth, child_parent = depth, parent_name
            if shown:
                if role == "StaticText" or bid is None:
                    text = f"{role} {_quote(name)}"
                else:
                    text = ", ".join([f"[{bid}] {role} {_quote(name)}", *_props(node)])
                lines.append((depth, text, bid))
                child_depth, child_parent = depth + 1, name
            for child in node.get("childIds") or []:
                visit(child, child_depth, child_parent)

        if root is not None:
            visit(root["nodeId"], 0, "")
        return lines

    lines = walk(cut=False)
    kept = walk(cut=True) if len(lines) > MAX_LINES else lines
    text = "\n".join("\t" * d + t for d, t, _ in kept)
    active = marks.get("active")
    focused = next((t for _, t, b in lines if active and b == active), None)
    scroll = (f"x={marks['scrollX']} y={marks['scrollY']} of page {marks['width']}x{marks['height']}, "
              f"viewport {marks['vw']}x{marks['vh']}")
    if len(kept) < len(lines):
        scroll += f" (long page: the tree shows the {len(kept)} of {len(lines)} nodes in the viewport)"
    return PageTree(text, focused, scroll, frozenset(b for _, _, b in kept if b))


def tabs_line(titles: list[tuple[str, str]], active: int) -> str:
    """``[0] 'Title' (url) (active), [1] ...``."""
    return ", ".join(f"[{i}] {_quote(t)} ({u})" + (" (active)" if i == active else "")
                     for i, (t, u) in enumerate(titles))

