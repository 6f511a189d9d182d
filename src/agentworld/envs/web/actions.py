"""Browser actions as text, BrowserGym-style: one Python-like call with literal arguments.

``click('12')``, ``fill('7', 'json dumps')``, ``select_option('9', 'py:function')``,
``hover('4')``, ``keyboard_press('Enter')``, ``keyboard_type('hello')``, ``scroll(0, 400)``,
``goto('http://docs.test/')``, ``go_back()``, ``go_forward()``, ``new_tab()``,
``tab_focus(1)``, ``tab_close()``, ``noop()``. Parsing never raises: a malformed action
gives the reason, which the environment shows as the observation's error line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

# name -> (required argument names, optional ones with defaults)
SIGNATURES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "click": (("bid",), {"button": "left"}),
    "dblclick": (("bid",), {}),
    "fill": (("bid", "value"), {}),
    "hover": (("bid",), {}),
    "select_option": (("bid", "options"), {}),
    "focus": (("bid",), {}),
    "clear": (("bid",), {}),
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
}
ACTION_NAMES = tuple(SIGNATURES)


@dataclass(frozen=True)
class Action:
    name: str
    args: dict[str, Any]

    def text(self) -> str:
        """The canonical text of the action (what the recorder stores)."""
        return f"{self.name}({', '.join(repr(v) for v in self.args.values())})"


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
        args.setdefault(k, default)
    return {p: args[p] for p in params}


def _type_problem(name: str, args: dict[str, Any]) -> str | None:
    if "bid" in args:
        if isinstance(args["bid"], int) and not isinstance(args["bid"], bool):
            args["bid"] = str(args["bid"])
        if not isinstance(args["bid"], str):
            return f"{name}: bid must be a string such as '12', got {args['bid']!r}"
    for k in ("value", "text", "key", "url"):
        if k in args and not isinstance(args[k], str):
            return f"{name}: {k} must be a string, got {args[k]!r}"
    for k in ("delta_x", "delta_y", "index", "wait_ms"):
        if k in args and (isinstance(args[k], bool) or not isinstance(args[k], int | float)):
            return f"{name}: {k} must be a number, got {args[k]!r}"
    if name == "select_option" and not (isinstance(args["options"], str) or
                                        (isinstance(args["options"], list) and all(isinstance(o, str) for o in args["options"]))):
        return "select_option: options must be a string or a list of strings"
    return None
