"""Android actions: the domain's JSON gestures, read and checked, and what datasets record.

The domain's action format (``agentworld.domains.android``) is one JSON object a step::

    {"action": "tap", "element": 3}            {"action": "tap", "x": 540, "y": 1200}
    {"action": "long_press", "element": 3}     {"action": "swipe", "direction": "up"}
    {"action": "type", "text": "milk"}         {"action": "type", "text": "milk", "element": 5, "enter": true}
    {"action": "enter"}  {"action": "back"}  {"action": "home"}  {"action": "wait", "seconds": 2}
    {"action": "open_app", "name": "com.android.deskclock"}

``swipe`` names the way the finger moves (``up`` shows what is below); a swipe may carry
an ``element`` to swipe inside. :func:`parse_action` turns the text into a typed
:class:`Gesture` or an error message; :func:`from_android_control` maps AndroidControl's
action dictionaries onto the same format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

KINDS = ("tap", "long_press", "swipe", "type", "enter", "back", "home", "open_app", "wait")
DIRECTIONS = ("up", "down", "left", "right")


@dataclass(frozen=True)
class Gesture:
    """One parsed action. ``element`` or ``x``/``y`` place taps, long presses, swipes and typing."""

    kind: str
    element: int | None = None
    x: int | None = None
    y: int | None = None
    direction: str | None = None
    text: str | None = None
    enter: bool = False
    name: str | None = None
    seconds: float | None = None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _placement(data: dict[str, Any]) -> dict[str, Any] | str:
    """``element`` / ``x`` and ``y`` of an action, checked (None where absent)."""
    element = data.get("element")
    if element is not None and _int(element) is None:
        return f"element {element!r} is not an element id (an integer)"
    x, y = data.get("x"), data.get("y")
    if (x is None) != (y is None):
        return "give both x and y, or an element"
    if x is not None and not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in (x, y)):
        return f"x and y are screen pixels (non-negative numbers), not {x!r}, {y!r}"
    return {"element": _int(element), "x": None if x is None else int(x), "y": None if y is None else int(y)}


def parse_action(text: str) -> Gesture | str:
    """The action as a :class:`Gesture`, or why it is not one (a message for the agent)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"the action is not JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(data, dict) or not isinstance(data.get("action"), str):
        return 'an action is one JSON object with an "action" field, e.g. {"action": "back"}'
    kind = data["action"]
    if kind not in KINDS:
        return f"unknown action {kind!r} (actions: {', '.join(KINDS)})"
    g = _placement(data)
    if isinstance(g, str):
        return g
    g["kind"] = kind
    placed = g["element"] is not None or g["x"] is not None
    if kind in ("tap", "long_press") and not placed:
        return f'{kind} needs an "element" id or "x" and "y"'
    if kind == "swipe":
        direction = data.get("direction")
        if direction not in DIRECTIONS:
            return f'swipe needs a "direction": one of {", ".join(DIRECTIONS)}'
        return Gesture(**g, direction=direction)
    if kind == "type":
        if not isinstance(data.get("text"), str):
            return 'type needs a "text" string'
        return Gesture(**g, text=data["text"], enter=bool(data.get("enter", False)))
    if kind == "open_app":
        name = data.get("name") or data.get("app_name")
        if not isinstance(name, str) or not name.strip():
            return 'open_app needs the app "name" (a label or a package)'
        return Gesture(kind, name=name.strip())
    if kind == "wait":
        seconds = data.get("seconds", 1)
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not 0 <= seconds <= 60:
            return '"seconds" is a number from 0 to 60'
        return Gesture(kind, seconds=float(seconds))
    return Gesture(**g)


def action_json(**fields: Any) -> str:
    """An action as the JSON text trajectories store (``action`` first, no None values)."""
    return json.dumps({k: v for k, v in fields.items() if v is not None}, ensure_ascii=False)


# AndroidControl's `scroll` names where the content moves into view ("down": show what is
# below), which the finger does by moving the other way.
_OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


_SIMPLE = {"navigate_back": "back", "navigate_home": "home"}


def _point(raw: dict[str, Any], kind: str) -> dict[str, int]:
    x, y = raw.get("x"), raw.get("y")
    if not isinstance(x, int | float) or not isinstance(y, int | float):
        raise ValueError(f"{kind} needs numeric 'x' and 'y', not {x!r}, {y!r}")
    return {"x": int(x), "y": int(y)}


def from_android_control(raw: Any) -> str:
    """An AndroidControl action dictionary (or its JSON text) in the domain's format.

    Raises ``ValueError`` naming what is wrong; coordinates stay the recorded pixels.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the action is not JSON ({exc.msg})") from None
    if not isinstance(raw, dict) or "action_type" not in raw:
        raise ValueError("an AndroidControl action is an object with an 'action_type'")
    kind = raw["action_type"]

    if kind in _SIMPLE:
        return action_json(action=_SIMPLE[kind])
    if kind in ("click", "long_press"):
        return action_json(action="tap" if kind == "click" else "long_press", **_point(raw, kind))
    if kind == "scroll":
        direction = raw.get("direction")
        if direction not in _OPPOSITE:
            raise ValueError(f"scroll direction {direction!r} is not one of up, down, left, right")
        return action_json(action="swipe", direction=_OPPOSITE[direction])
    if kind == "open_app":
        name = raw.get("app_name")
        if not isinstance(name, str) or not name:
            raise ValueError("open_app needs an 'app_name'")
        return action_json(action="open_app", name=name)
    if kind in ("type", "input_text"):
        text = raw.get("text")
        if not isinstance(text, str):
            raise ValueError(f"{kind} needs a 'text' string")
        if kind == "input_text":
            return action_json(action="type", text=text)
        return action_json(action="type", text=text, **_point(raw, kind), enter=True)
    if kind == "wait":
        seconds = raw.get("seconds")
        return action_json(action="wait", seconds=seconds if isinstance(seconds, int | float) else 1)
    raise ValueError(f"unknown AndroidControl action_type {kind!r}")


def swipe_direction(start: tuple[float, float], end: tuple[float, float]) -> str:
    """The way a finger moved from ``start`` to ``end`` (the larger displacement wins)."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    if abs(dx) > abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"
