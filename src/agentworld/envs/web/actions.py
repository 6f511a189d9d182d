"""Browser actions as text, BrowserGym-style: one Python-like call with literal arguments.

The names, parameters and defaults are BrowserGym's (``browsergym.core.action.functions``):

- on element ids: ``click('12')`` (also ``button='right'``, ``modifiers=['Shift']``),
  ``dblclick``, ``fill('7', 'json dumps')``, ``clear``, ``select_option('9', 'py:function')``,
  ``hover``, ``focus``, ``press('7', 'Enter')``, ``drag_and_drop('4', '9')``,
  ``upload_file('5', 'notes.txt')`` (files of the environment's upload folder only);
- at viewport coordinates: ``mouse_move(x, y)``, ``mouse_down(x, y, button)``,
  ``mouse_up(x, y, button)``, ``mouse_click(x, y, button)``, ``mouse_dblclick(x, y, button)``,
  ``mouse_drag_and_drop(from_x, from_y, to_x, to_y)``, ``mouse_upload_file(x, y, file)``;
- keyboard and page: ``keyboard_press('Enter')``, ``keyboard_type('hello')``,
  ``scroll(0, 400)``, ``goto('http://docs.test/')``, ``go_back()``, ``go_forward()``,
  ``new_tab()``, ``tab_focus(1)``, ``tab_close()``, ``noop()``;
- to the user: ``send_msg_to_user('...')`` and ``report_infeasible('...')`` (ends the episode).

Parsing never raises: a malformed action gives the reason, which the environment shows as
the observation's error line.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

# name -> (required argument names, optional ones with defaults)
SIGNATURES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "click": (("bid",), {"button": "left", "modifiers": []}),
    "dblclick": (("bid",), {"button": "left", "modifiers": []}),
    "fill": (("bid", "value"), {}),
    "hover": (("bid",), {}),
    "select_option": (("bid", "options"), {}),
    "focus": (("bid",), {}),
    "clear": (("bid",), {}),
    "press": (("bid", "key_comb"), {}),
    "drag_and_drop": (("from_bid", "to_bid"), {}),
    "upload_file": (("bid", "file"), {}),
    "mouse_move": (("x", "y"), {}),
    "mouse_down": (("x", "y"), {"button": "left"}),
    "mouse_up": (("x", "y"), {"button": "left"}),
    "mouse_click": (("x", "y"), {"button": "left"}),
    "mouse_dblclick": (("x", "y"), {"button": "left"}),
    "mouse_drag_and_drop": (("from_x", "from_y", "to_x", "to_y"), {}),
    "mouse_upload_file": (("x", "y", "file"), {}),
    "keyboard_press": (("key",), {}),
    "keyboard_type": (("text",), {}),
    "scroll": (("delta_x", "delta_y"), {}),
    "goto": (("url",), {}),
    "go_back": ((), {}),
    "go_forward": ((), {}),
    "new_tab": ((), {}),
    "tab_focus": (("index",), {}),
    "tab_close": ((), {}),
    "noop": ((), {"wait_ms": 0}),
    "send_msg_to_user": (("text",), {}),
    "report_infeasible": (("reason",), {}),
}
ACTION_NAMES = tuple(SIGNATURES)
BUTTONS = ("left", "middle", "right")
MODIFIERS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")
_BIDS = ("bid", "from_bid", "to_bid")
_STRINGS = ("value", "text", "key", "key_comb", "url", "reason")
_NUMBERS = ("delta_x", "delta_y", "index", "wait_ms", "x", "y", "from_x", "from_y", "to_x", "to_y")


@dataclass(frozen=True)
class Action:
    name: str
    args: dict[str, Any]

    def text(self) -> str:
        """The canonical text of the action: required arguments by position, optional ones
        by name where they differ from their defaults."""
        required, optional = SIGNATURES[self.name]
        parts = [repr(self.args[p]) for p in required]
        parts += [f"{k}={self.args[k]!r}" for k, default in optional.items() if self.args.get(k, default) != default]
        return f"{self.name}({', '.join(parts)})"


def parse_action(text: str) -> Action | str:
    """The action, or why ``text`` is not one."""
    src = text.strip()
    if not src:
        return "empty action; expected one call such as click('12')"
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        return f"could not parse action {src[:80]!r}: {exc.msg}"
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return f"expected one call such as click('12'), got {src[:80]!r}"
    name = call.func.id
    if name not in SIGNATURES:
        return f"unknown action {name!r}; available: {', '.join(ACTION_NAMES)}"
    try:
        values = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except ValueError:
        return f"{name}: arguments must be literals (strings, numbers, lists)"
    if None in kwargs:
        return f"{name}: **kwargs are not supported"
    args = _bind(name, values, kwargs)
    if isinstance(args, str):
        return args
    problem = _type_problem(name, args)
    return problem if problem else Action(name, args)


def _bind(name: str, values: list[Any], kwargs: dict[str, Any]) -> dict[str, Any] | str:
    """Arguments by parameter name, defaults filled in, or what is wrong with them."""
    required, optional = SIGNATURES[name]
    params = [*required, *optional]
    if len(values) > len(params):
        return f"{name}() takes {len(params)} argument(s) ({', '.join(params) or 'none'}), got {len(values)}"
    args = dict(zip(params, values, strict=False))
    for k, v in kwargs.items():
        if k not in params:
            return f"{name}() got an unexpected argument {k!r}"
        if k in args:
            return f"{name}() got multiple values for argument {k!r}"
        args[k] = v
    if missing := [p for p in required if p not in args]:
        return f"{name}() missing required argument(s): {', '.join(missing)}"
    for k, default in optional.items():
        args.setdefault(k, list(default) if isinstance(default, list) else default)
    return {p: args[p] for p in params}


def _type_problem(name: str, args: dict[str, Any]) -> str | None:
    for k in _BIDS:
        if k not in args:
            continue
        if isinstance(args[k], int) and not isinstance(args[k], bool):
            args[k] = str(args[k])
        if not isinstance(args[k], str):
            return f"{name}: {k} must be a string such as '12', got {args[k]!r}"
    for k in _STRINGS:
        if k in args and not isinstance(args[k], str):
            return f"{name}: {k} must be a string, got {args[k]!r}"
    for k in _NUMBERS:
        if k in args and (isinstance(args[k], bool) or not isinstance(args[k], int | float) or not math.isfinite(args[k])):
            return f"{name}: {k} must be a number, got {args[k]!r}"
    if "button" in args and args["button"] not in BUTTONS:
        return f"{name}: button must be one of {', '.join(map(repr, BUTTONS))}, got {args['button']!r}"
    if "modifiers" in args and not (isinstance(args["modifiers"], list | tuple)
                                    and all(m in MODIFIERS for m in args["modifiers"])):
        return f"{name}: modifiers must be a list of {', '.join(map(repr, MODIFIERS))}, got {args['modifiers']!r}"
    if "modifiers" in args:
        args["modifiers"] = list(args["modifiers"])
    if name == "select_option" and not _str_or_strs(args["options"]):
        return "select_option: options must be a string or a list of strings"
    if "file" in args and not _str_or_strs(args["file"]):
        return f"{name}: file must be a file name or a list of file names, got {args['file']!r}"
    return None


def _str_or_strs(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
