"""MiniWoB++ task templates: the package's own pages, started with the episode's seed.

Each script reads the page's instruction (the text before its first element) and solves
it, sometimes with a slip first (a wrong option, a wrong tick taken back, a typo erased).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from agentworld.envs.web.episode import WebTask
from agentworld.envs.web.pagetext import (
    NO_BID,
    Gen,
    click,
    fill,
    find,
    hover,
    instruction,
    nodes,
    press,
    quoted,
    select,
    texts,
    type_,
)
from agentworld.seeding import keyed_rng


def _mw(name: str, task: str, solve: Callable[[random.Random], Callable[[str], Gen]], what: str) -> Callable[[int], WebTask]:
    def make(seed: int) -> WebTask:
        rng = keyed_rng(seed, "web", name)
        return WebTask(name, what, {"miniwob": task}, solve(rng), {"miniwob": task})

    make.__name__ = name
    return make


def _enter_text(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        words = quoted(instruction(obs))
        box = find(obs, "textbox")
        obs = yield click(box)
        if rng.random() < 0.5:
            obs = yield type_((words[0] if words else "") + "x")
            obs = yield press("Backspace")
        else:
            obs = yield type_(words[0] if words else "")
        yield click(find(obs, "button", "Submit"))

    return script


def _login(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        words = quoted(instruction(obs)) + ["", ""]
        boxes = [n.bid for n in nodes(obs) if n.role == "textbox"] + [NO_BID, NO_BID]
        obs = yield click(boxes[0])
        obs = yield type_(words[0])
        obs = yield press("Tab")
        obs = yield type_(words[1])
        yield click(find(obs, "button", "Login"))

    return script


def _choose_list(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        m = re.search(r"Select (.+?) from the list", instruction(obs))
        box = find(obs, "combobox")
        options = [n.name for n in nodes(obs) if n.role == "option"]
        if options and rng.random() < 0.5:
            obs = yield select(box, rng.choice(options))
        obs = yield select(box, m.group(1) if m else "")
        yield click(find(obs, "button", "Submit"))

    return script


def _checkboxes(role: str) -> Callable[[random.Random], Callable[[str], Gen]]:
    def solve(rng: random.Random) -> Callable[[str], Gen]:
        def script(obs: str) -> Gen:
            m = re.search(r"Select (.*?) and click Submit", instruction(obs))
            wanted = [w.strip() for w in re.split(r",\s*|\s+and\s+", m.group(1))] if m and m.group(1) != "nothing" else []
            boxes = [n for n in nodes(obs) if n.role == role]
            others = [n for n in boxes if n.name not in wanted]
            if others and rng.random() < 0.5:
                obs = yield click(rng.choice(others).bid)
                if role == "checkbox":  # a wrong tick, taken back
                    ticked = [n.bid for n in nodes(obs) if n.role == role and "checked='true'" in n.props]
                    obs = yield click(ticked[0] if ticked else NO_BID)
            for w in wanted:
                obs = yield click(find(obs, role, w))
            yield click(find(obs, "button", "Submit"))

        return script

    return solve


def _password(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        words = quoted(instruction(obs)) + [""]
        boxes = [n.bid for n in nodes(obs) if n.role == "textbox"] + [NO_BID, NO_BID]
        obs = yield fill(boxes[0], words[0])
        obs = yield fill(boxes[1], words[0] if rng.random() < 0.7 else words[0][::-1])
        yield click(find(obs, "button", "Submit"))

    return script


def _click_tab(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        m = re.search(r"Tab #(\d+)", instruction(obs))
        tabs = [n for n in nodes(obs) if n.role == "link" and n.name.startswith("Tab #")]
        if tabs and rng.random() < 0.5:
            obs = yield hover(rng.choice(tabs).bid)
        yield click(find(obs, "link", f"Tab #{m.group(1)}" if m else ""))

    return script


def _button_sequence(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        obs = yield hover(find(obs, "button", "TWO"))
        obs = yield click(find(obs, "button", "ONE"))
        yield click(find(obs, "button", "TWO"))

    return script


def _read_table(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        m = re.search(r"value of (.+?) into", instruction(obs))
        cells = [n.name for n in nodes(obs) if n.role == "cell"]
        value = next((cells[i + 1] for i, c in enumerate(cells[:-1]) if m and c == m.group(1)), "")
        obs = yield click(find(obs, "textbox"))
        obs = yield type_(value)
        yield click(find(obs, "button", "Submit"))

    return script


def _arithmetic(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        problem = next((t for t in texts(obs) if t.endswith("=")), "")
        m = re.match(r"(-?\d+)\s*([-+x])\s*(-?\d+)", problem)
        a, op, b = (int(m.group(1)), m.group(2), int(m.group(3))) if m else (0, "+", 0)
        answer = a + b if op == "+" else a - b if op == "-" else a * b
        obs = yield fill(find(obs, "textbox"), str(answer + (1 if rng.random() < 0.3 else 0)))
        yield click(find(obs, "button", "Submit"))

    return script


def _dialog(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        obs = yield hover(find(obs, "button", "Close"))
        yield click(find(obs, "button", "Close"))

    return script


def _text_transform(rng: random.Random) -> Callable[[str], Gen]:
    def script(obs: str) -> Gen:
        body = texts(obs)
        chars = "".join(t for t in body[1:] if len(t) == 1)
        obs = yield click(find(obs, "textbox"))
        obs = yield type_(chars)
        yield click(find(obs, "button", "Submit"))

    return script


MINIWOB_TEMPLATES: dict[str, Callable[[int], WebTask]] = {f.__name__: f for f in [
    _mw("mw_enter_text", "enter-text", _enter_text, "Enter the given text into the text field and press Submit."),
    _mw("mw_login_user", "login-user", _login, "Log in with the given username and password."),
    _mw("mw_choose_list", "choose-list", _choose_list, "Select the given item from the list and submit."),
    _mw("mw_click_checkboxes", "click-checkboxes", _checkboxes("checkbox"), "Tick the given checkboxes and submit."),
    _mw("mw_click_option", "click-option", _checkboxes("radio"), "Choose the given option and submit."),
    _mw("mw_enter_password", "enter-password", _password, "Enter the given password in both fields and submit."),
    _mw("mw_click_tab", "click-tab", _click_tab, "Open the given tab."),
    _mw("mw_button_sequence", "click-button-sequence", _button_sequence, "Click button ONE, then button TWO."),
    _mw("mw_read_table", "read-table", _read_table, "Read the asked value from the table and submit it."),
    _mw("mw_arithmetic", "simple-arithmetic", _arithmetic, "Solve the arithmetic problem and submit the answer."),
    _mw("mw_click_dialog", "click-dialog", _dialog, "Close the dialog."),
    _mw("mw_text_transform", "text-transform", _text_transform, "Type the shown text and submit it."),
]}
