"""Android view hierarchies: one node type, read from the forms devices and datasets store.

- ``uiautomator dump`` XML (``<hierarchy><node class=.. bounds="[l,t][r,b]" ..>``), what
  a device or emulator gives over adb;
- accessibility forests as JSON (the ``AndroidAccessibilityForest`` message of
  ``android_env``, which AndroidControl stores per step: ``windows[].tree.nodes[]`` with
  ``unique_id``/``child_ids``), in either proto-JSON spelling (``bounds_in_screen`` or
  ``boundsInScreen``);
- nested view JSON as RICO stores it (``activity.root`` with ``children``).

Every reader raises :class:`HierarchyError` with a location (``file:line`` for XML, the
JSON path otherwise) for input it cannot read; nothing is guessed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

FLAGS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "long-clickable",
         "password", "scrollable", "selected")
"""Boolean node properties, in uiautomator's spelling."""


MAX_DEPTH = 200
"""Deeper nesting is refused (real screens stay far below; the readers recurse)."""


class HierarchyError(ValueError):
    """A view hierarchy that cannot be read; the message says where."""


@dataclass
class ViewNode:
    """One view: its class, what it shows and how it can be used."""

    cls: str = ""
    """Fully qualified class (``android.widget.TextView``)."""
    text: str = ""
    desc: str = ""
    """Content description."""
    resource_id: str = ""
    hint: str = ""
    package: str = ""
    bounds: tuple[int, int, int, int] | None = None
    """(left, top, right, bottom) in screen pixels."""
    flags: dict[str, bool] = field(default_factory=dict)
    visible: bool = True
    children: list[ViewNode] = field(default_factory=list)

    @property
    def short_class(self) -> str:
        return self.cls.rsplit(".", 1)[-1] or "View"

    def flag(self, name: str) -> bool:
        return self.flags.get(name, name == "enabled")

    def center(self) -> tuple[int, int] | None:
        if self.bounds is None:
            return None
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2


@dataclass
class Screen:
    """A whole screen: its top-level views (one per window or root)."""

    roots: list[ViewNode]
    rotation: int = 0


_BOUNDS = re.compile(r"^\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]$")


def parse_bounds(text: str, where: str) -> tuple[int, int, int, int] | None:
    """uiautomator's ``[l,t][r,b]`` (empty: no bounds)."""
    if not text:
        return None
    m = _BOUNDS.match(text.strip())
    if not m:
        raise HierarchyError(f"{where}: bounds {text!r} is not [left,top][right,bottom]")
    left, top, right, bottom = map(int, m.groups())
    return left, top, right, bottom


# -- uiautomator XML --------------------------------------------------------------------

def parse_uiautomator(xml: str | bytes, source: str = "<dump>") -> Screen:
    """A ``uiautomator dump`` file. ``source`` names it in errors (``source:line``)."""
    text = xml.decode("utf-8", "replace") if isinstance(xml, bytes) else xml
    # `adb exec-out uiautomator dump /dev/tty` prints a status line after the XML.
    end = text.rfind("</hierarchy>")
    if end >= 0:
        text = text[: end + len("</hierarchy>")]
    if not text.strip():
        raise HierarchyError(f"{source}: empty view hierarchy dump")
    try:
        top = ET.fromstring(text)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else "?"
        raise HierarchyError(f"{source}:{line}: not well-formed XML ({exc})") from None
    rotation = 0
    if top.tag == "hierarchy":
        try:
            rotation = int(top.get("rotation", "0") or 0)
        except ValueError:
            raise HierarchyError(f"{source}: rotation {top.get('rotation')!r} is not a number") from None
        elems = list(top)
    elif top.tag == "node":
        elems = [top]
    else:
        raise HierarchyError(f"{source}: the root element is <{top.tag}>, not <hierarchy> (a uiautomator dump?)")
    roots = [_xml_tree(e, f"{source}: node /{i}") for i, e in enumerate(elems)]
    if not roots:
        raise HierarchyError(f"{source}: the dump holds no <node> (the screen was not readable?)")
    return Screen(roots=roots, rotation=rotation)


def _xml_tree(elem: ET.Element, where: str, depth: int = 0) -> ViewNode:
    if depth > MAX_DEPTH:
        raise HierarchyError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if elem.tag != "node":
        raise HierarchyError(f"{where}: unexpected element <{elem.tag}> in a view hierarchy")
    node = _xml_node(elem.attrib, where)
    node.children = [_xml_tree(c, f"{where}/{i}", depth + 1) for i, c in enumerate(elem)]
    return node


def _xml_node(a: dict[str, str], where: str) -> ViewNode:
    flags = {f: a[f] == "true" for f in FLAGS if f in a}
    return ViewNode(cls=a.get("class", ""), text=a.get("text", ""), desc=a.get("content-desc", ""),
                    resource_id=a.get("resource-id", ""), hint=a.get("hint", ""), package=a.get("package", ""),
                    bounds=parse_bounds(a.get("bounds", ""), where), flags=flags,
                    visible=a.get("visible-to-user", "true") != "false")


# -- accessibility forest JSON (android_env / AndroidControl) ---------------------------

def _get(d: dict[str, Any], snake: str, default: Any = None) -> Any:
    """A proto-JSON field in either spelling (``child_ids`` or ``childIds``)."""
    if snake in d:
        return d[snake]
    camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), snake)
    return d.get(camel, default)


_FOREST_FLAGS = {"checkable": "is_checkable", "checked": "is_checked", "clickable": "is_clickable",
                 "enabled": "is_enabled", "focusable": "is_focusable", "focused": "is_focused",
                 "long-clickable": "is_long_clickable", "password": "is_password",
                 "scrollable": "is_scrollable", "selected": "is_selected"}


def parse_forest(data: Any, where: str = "forest") -> Screen:
    """An accessibility forest as JSON: ``{"windows": [{"tree": {"nodes": [...]}}]}``.

    Nodes refer to their children by ``unique_id``; windows are ordered front to back by
    ``layer`` (the highest first), as the user sees them.
    """
    if not isinstance(data, dict) or not isinstance(data.get("windows"), list):
        raise HierarchyError(f"{where}: an accessibility forest is an object with a 'windows' list")
    windows = sorted(enumerate(data["windows"]), key=lambda iw: -_int(_get(iw[1], "layer", 0) if isinstance(iw[1], dict) else 0))
    roots: list[ViewNode] = []
    for i, window in windows:
        w = f"{where}.windows[{i}]"
        if not isinstance(window, dict):
            raise HierarchyError(f"{w}: a window is an object")
        nodes = (window.get("tree") or {}).get("nodes")
        if not isinstance(nodes, list):
            raise HierarchyError(f"{w}: no tree.nodes list")
        roots.extend(_forest_tree(nodes, w))
    if not roots:
        raise HierarchyError(f"{where}: the forest holds no node")
    return Screen(roots=roots)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _forest_tree(nodes: list[Any], where: str) -> list[ViewNode]:
    # Proto3 JSON leaves false booleans out: a missing flag is false, except where no
    # node of the tree carries the field at all (an export that drops it: unknown).
    present = {key for raw in nodes if isinstance(raw, dict) for key in raw}
    carried = {key for key in (*_FOREST_FLAGS.values(), "is_visible_to_user")
               if key in present or re.sub(r"_(\w)", lambda m: m.group(1).upper(), key) in present}
    by_id: dict[int, ViewNode] = {}
    kids: dict[int, list[int]] = {}
    order: list[int] = []
    for j, raw in enumerate(nodes):
        w = f"{where}.tree.nodes[{j}]"
        if not isinstance(raw, dict):
            raise HierarchyError(f"{w}: a node is an object")
        uid = _get(raw, "unique_id", 0)  # proto3 JSON leaves a zero id out
        if not isinstance(uid, int):
            raise HierarchyError(f"{w}: unique_id {uid!r} is not an integer")
        if uid in by_id:
            raise HierarchyError(f"{w}: unique_id {uid} appears twice")
        rect = _get(raw, "bounds_in_screen")
        bounds = None
        if rect is not None:
            if not isinstance(rect, dict):
                raise HierarchyError(f"{w}: bounds_in_screen is an object with left/top/right/bottom")
            bounds = tuple(_int(rect.get(k, 0)) for k in ("left", "top", "right", "bottom"))
        flags = {name: bool(_get(raw, key, False)) for name, key in _FOREST_FLAGS.items() if key in carried}
        by_id[uid] = ViewNode(cls=str(_get(raw, "class_name", "")), text=str(_get(raw, "text", "")),
                              desc=str(_get(raw, "content_description", "")),
                              resource_id=str(_get(raw, "view_id_resource_name", "")),
                              hint=str(_get(raw, "hint_text", "")), package=str(_get(raw, "package_name", "")),
                              bounds=bounds, flags=flags,  # type: ignore[arg-type]
                              visible=bool(_get(raw, "is_visible_to_user", "is_visible_to_user" not in carried)))
        children = _get(raw, "child_ids", [])
        if not isinstance(children, list) or not all(isinstance(c, int) for c in children):
            raise HierarchyError(f"{w}: child_ids is a list of integers")
        kids[uid] = children
        order.append(uid)
    referenced = {c for cs in kids.values() for c in cs}
    for uid, cs in kids.items():
        for c in cs:
            if c not in by_id:
                raise HierarchyError(f"{where}: node {uid} lists child {c}, which is not in the tree")
            by_id[uid].children.append(by_id[c])
    roots = [by_id[u] for u in order if u not in referenced]
    if nodes and not roots:
        raise HierarchyError(f"{where}: every node is some node's child (a cycle)")
    _check_acyclic(roots, len(by_id), where)
    return roots


def _check_acyclic(roots: list[ViewNode], total: int, where: str) -> None:
    seen, stack = 0, [(r, 0) for r in roots]
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > total:
            raise HierarchyError(f"{where}: child_ids form a cycle or share a child")
        if depth > MAX_DEPTH:
            raise HierarchyError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        stack.extend((c, depth + 1) for c in node.children)


# -- nested JSON (RICO view hierarchies) --------------------------------------------------

def parse_nested(data: Any, where: str = "hierarchy") -> Screen:
    """Nested view JSON: ``{"activity": {"root": node}}`` or a bare node, each node with
    ``class``, ``bounds`` ``[l, t, r, b]``, ``text``, ``content-desc`` (a string or a list),
    ``resource-id``, boolean flags and ``children``."""
    root = data
    if isinstance(data, dict) and isinstance(data.get("activity"), dict):
        root, where = data["activity"].get("root"), f"{where}.activity.root"
    if not isinstance(root, dict):
        raise HierarchyError(f"{where}: a view hierarchy is an object (a node, or {{'activity': {{'root': node}}}})")
    return Screen(roots=[_nested_node(root, where, 0)])


def _nested_node(raw: Any, where: str, depth: int) -> ViewNode:
    if depth > MAX_DEPTH:
        raise HierarchyError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if not isinstance(raw, dict):
        raise HierarchyError(f"{where}: a node is an object")
    bounds = raw.get("bounds")
    if bounds is not None and not (isinstance(bounds, list) and len(bounds) == 4
                                   and all(isinstance(b, int | float) for b in bounds)):
        raise HierarchyError(f"{where}.bounds: [left, top, right, bottom] numbers, not {bounds!r}")
    desc = raw.get("content-desc") or ""
    if isinstance(desc, list):
        desc = " ".join(str(d) for d in desc if d)
    flags = {f: bool(raw[f]) for f in FLAGS if f in raw}
    if raw.get("scrollable-vertical") or raw.get("scrollable-horizontal"):
        flags["scrollable"] = True
    children = raw.get("children") or []
    if not isinstance(children, list):
        raise HierarchyError(f"{where}.children: a list")
    node = ViewNode(cls=str(raw.get("class") or ""), text=str(raw.get("text") or ""), desc=str(desc),
                    resource_id=str(raw.get("resource-id") or ""), package=str(raw.get("package") or ""),
                    bounds=tuple(int(b) for b in bounds) if bounds else None,  # type: ignore[arg-type]
                    flags=flags, visible=raw.get("visible-to-user", raw.get("visibility", "visible")) not in (False, "gone", "invisible"))
    node.children = [_nested_node(c, f"{where}.children[{i}]", depth + 1) for i, c in enumerate(children) if c is not None]
    return node
