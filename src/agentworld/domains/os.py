"""OS: a desktop agent runs Python (pyautogui); the observation is the desktop accessibility tree."""

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass

from agentworld.domains._spec import DomainSpec
from agentworld.domains.effects import Effect, Effects

SPEC = DomainSpec(
    name="os",
    title="Desktop OS",
    environment="a Linux desktop session with windows and applications",
    action_space=(
        "Each action is a short Python program using pyautogui (click, typewrite, hotkey, "
        "press, moveTo, scroll) and the app helpers declared for the task; WAIT, DONE and "
        "FAIL are special actions."
    ),
    observation_format=(
        "Print the desktop accessibility tree after the action, one node per line: "
        "role, name, text, position (x, y) and size (w, h), indented by depth, followed by "
        "the window list with the focused window marked. Errors raised by the program are "
        "shown as a Python traceback. Lines read `role 'name' (x, y) WxH states text='...'` "
        "(states such as focused, active, editable, checked, disabled; the focused text field "
        "also shows caret=N), under `<root>` and one `application 'name'` line per program; "
        "then `Windows:` with `*` before the active window, `Focused:` naming the focused node "
        "and its window, and `Output:` with what the program printed, if anything."
    ),
    gui=True,
    judge_guidance=(
        "The observation is a desktop accessibility tree with roles, names, positions and "
        "sizes, plus window state. Check that the action's effect shows (dialogs opened, "
        "text typed, focus moved), that geometry is plausible and consistent, and that "
        "untouched windows keep their state."
    ),
)


# -- reading observations (the env, its scripts, the ledger) ------------------------------

_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_NODE = re.compile(rf"^(\s*)([\w-]+) ({_QUOTED}) \((-?\d+), (-?\d+)\) (-?\d+)x(-?\d+)([^\n]*)$")
_TEXT = re.compile(rf" text=({_QUOTED})")
_WINDOW = re.compile(rf"^\s*(\*?)\s*({_QUOTED}) \((-?\d+), (-?\d+)\) (\d+)x(\d+)\s*$")
_EDITOR = re.compile(r"^(\*?)(/.+) - Mousepad$")


@dataclass(frozen=True)
class Node:
    """One line of the accessibility tree: ``role 'name' (x, y) WxH states text='...'``."""

    role: str
    name: str
    x: int
    y: int
    w: int
    h: int
    depth: int
    states: tuple[str, ...] = ()
    text: str | None = None

    @property
    def centre(self) -> tuple[int, int]:
        return self.x + self.w // 2, self.y + self.h // 2


def _literal(quoted: str) -> str:
    try:
        return str(ast.literal_eval(quoted))
    except (ValueError, SyntaxError):
        return quoted[1:-1]


def tree_nodes(observation: str) -> list[Node]:
    """The tree's nodes in order (lines that are not nodes are skipped)."""
    out = []
    for line in observation.split("\nWindows:", 1)[0].splitlines():
        if not (m := _NODE.match(line)):
            continue
        rest = m.group(8)
        text = _TEXT.search(rest)
        head = rest[:text.start()] if text else rest
        states = tuple(s for s in head.split(" ", 2)[1].split(",") if s) if head.startswith(" ") and head.strip() else ()
        out.append(Node(m.group(2), _literal(m.group(3)), *map(int, m.group(4, 5, 6, 7)), depth=len(m.group(1)) // 2,
                        states=states, text=_literal(text.group(1)) if text else None))
    return out


def windows(observation: str) -> list[tuple[str, bool]]:
    """(title, active) of the window list."""
    if "\nWindows:\n" not in observation:
        return []
    out = []
    for line in observation.split("\nWindows:\n", 1)[1].splitlines():
        if line.startswith("Focused:") or not line.startswith("  "):
            break
        if m := _WINDOW.match(line):
            out.append((_literal(m.group(2)), m.group(1) == "*"))
    return out


def effects(action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """Files whose content the observation shows: an editor window whose title carries no
    ``*`` holds a buffer equal to its file, so the file contains the text shown (writes,
    whether this action saved or an earlier one did). Shown text cut short tells nothing."""
    ops: list[Effect] = []
    nodes = tree_nodes(observation)
    for i, n in enumerate(nodes):
        m = _EDITOR.match(n.name) if n.role == "frame" else None
        if not m or m.group(1):
            continue
        for child in nodes[i + 1:]:
            if child.depth <= n.depth:
                break
            if child.role == "text" and "editable" in child.states:
                text = child.text or ""
                if not re.search(r"\.\.\. \(\d+ characters\)$", text):
                    ops.append(Effect("write", target=m.group(2), value=text))
                break
    return Effects(ops=ops)
