"""The ledger for the web domain: the pages the browser showed and the values put in fields.

A page state starts with ``URL:`` (see :mod:`agentworld.envs.web.env`); a failed action puts
an ``Error:`` line first and changes nothing. After a ``fill``, ``select_option`` or
``keyboard_type`` that succeeded, the field's value as the tree shows it is the session's
fact; while the browser stays on that page (same URL up to the fragment), every later state
that shows the field must show that value, and a ``goto`` that succeeded must land on its URL.
"""

from __future__ import annotations

import re

from agentworld.domains.presented import action_of
from agentworld.envs.web.actions import Action, parse_action
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState

_URL = re.compile(r"^URL: (\S+)", re.M)
_FOCUSED = re.compile(r"^Focused: \[(\w+)\]", re.M)
_VALUE = re.compile(r"value='((?:[^'\\]|\\.)*)'")
_TYPED = ("fill", "select_option", "keyboard_type", "clear")


def page_url(observation: str) -> str | None:
    m = _URL.search(observation)
    return m.group(1) if m else None


def _page(url: str) -> str:
    return url.split("#", 1)[0]


def failed(observation: str) -> bool:
    return observation.lstrip().startswith("Error:")


def field_value(observation: str, bid: str) -> str | None:
    """The value the tree shows for element ``bid`` (``""``: shown without a value), or None
    when the tree does not show the element."""
    line = re.search(rf"^\t*\[{re.escape(bid)}\] .*$", observation, re.M)
    if line is None:
        return None
    m = _VALUE.search(line.group(0))
    return m.group(1).replace("\\'", "'") if m else ""


def _target(action: Action, observation: str) -> str | None:
    """The field an action typed into: its bid, or the focused element for keyboard_type."""
    if action.name == "keyboard_type":
        m = _FOCUSED.search(observation)
        return m.group(1) if m else None
    return action.args.get("bid")


def _norm(url: str) -> str:
    return url.rstrip("/")


class WebLedger(LedgerRules):
    def update(self, state: LedgerState, action: str, observation: str) -> None:
        url = page_url(observation)
        if url is None:
            return
        if state.visited and _page(state.visited[-1]) != _page(url):
            state.form_values.clear()  # another page: its fields are not the ones filled
        if url in state.visited:
            state.visited.remove(url)
        state.visited.append(url)
        parsed = parse_action(action_of(action))
        if isinstance(parsed, Action) and parsed.name in _TYPED and not failed(observation):
            bid = _target(parsed, observation)
            if bid and (value := field_value(observation, bid)) is not None:
                state.form_values[bid] = value

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        url = page_url(observation)
        parsed = parse_action(action_of(action))
        if url is None or not isinstance(parsed, Action):
            return []
        conflicts = []
        if parsed.name == "goto" and not failed(observation) and _norm(url) != _norm(parsed.args["url"]):
            conflicts.append(Conflict(kind="url", key=parsed.args["url"], expected=parsed.args["url"],
                                      detail=f"a successful goto shows {url}"))
        if parsed.name == "fill" and not failed(observation):
            shown = field_value(observation, parsed.args["bid"])
            if shown is not None and shown != parsed.args["value"]:
                conflicts.append(Conflict(kind="form_value", key=parsed.args["bid"], expected=parsed.args["value"],
                                          detail=f"the filled field shows {shown!r}"))
        if state.visited and _page(state.visited[-1]) == _page(url):
            touched = _target(parsed, observation) if parsed.name in _TYPED else None
            for bid, value in state.form_values.items():
                if bid != touched and (shown := field_value(observation, bid)) is not None and shown != value:
                    conflicts.append(Conflict(kind="form_value", key=bid, expected=value,
                                              detail=f"the field now shows {shown!r}"))
        return conflicts
