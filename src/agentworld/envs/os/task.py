"""Desktop task instances, the registry of seeded templates, and the helpers scripts use
to act on what they see (a node's centre, read from the observation's tree)."""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from agentworld.domains.os import Node, tree_nodes

Script = Generator[str, str, None]
"""A scripted episode: yields action programs, receives each step's observation."""

EDITOR = ("mousepad",)
CALCULATOR = ("galculator",)


@dataclass(frozen=True)
class DesktopTask:
    """One concrete task: the desktop's starting state and a scripted way through it."""

    name: str
    description: str
    apps: tuple[tuple[str, ...], ...] = (EDITOR,)
    """Programs started (in /workspace) before the first observation, one window each."""
    files: dict[str, str] = field(default_factory=dict)
    """Path (absolute, or relative to /workspace) -> content, written before the session."""
    script: Callable[[str], Script] | None = None
    """The scripted driver: called with the first observation, a fresh generator of
    action programs per episode (each ``yield`` receives that step's observation)."""
    category: str = "misc"
    check: Check | None = None
    """The self-check of the stated effect, run on the episode's :class:`Outcome` after the
    script: a reason why the task is not done, or None when it is."""


@dataclass(frozen=True)
class Outcome:
    """What a task's check looks at once the script has run."""

    observation: str
    """The last observation (with the last program's output)."""
    read: Callable[[str], str | None]
    """A file's content in the sandbox (a path relative to /workspace or absolute), None if missing."""
    probe: Callable[[str], str]
    """Runs a read-only Python program in the session, unrecorded; returns its observation
    (what it printed under ``Output:``)."""


Check = Callable[[Outcome], "str | None"]
Builder = Callable[[random.Random], DesktopTask]


class MayNotChange(str):
    """A scripted action whose effect the tree may not show (a selection, the clipboard, a
    caret already where it goes, a window manager's key that races the next look). Every
    other scripted action must change the observation, or the episode fails."""


def maybe(action: str) -> str:
    """``action``, marked as allowed to leave the observation as it was."""
    return MayNotChange(action)


def expects_change(action: str) -> bool:
    return not isinstance(action, MayNotChange)


MENU_ITEMS = ("menu-item", "radio-menu-item", "check-menu-item")
"""The roles of a menu's entries (GTK reports radio and check items under their own)."""

Roles = str | tuple[str, ...]


def find(observation: str, role: Roles, name: str | None = None, *, contains: str | None = None) -> Node | None:
    """The first node with ``role`` (or one of several) and ``name`` (or a name containing
    ``contains``) on screen. Names are compared without their padding: GTK menu items carry
    trailing spaces (the room for their shortcut column)."""
    roles = (role,) if isinstance(role, str) else role
    for n in tree_nodes(observation):
        label = n.name.strip()
        named = (name is None or label == name.strip()) and (contains is None or contains in label)
        if n.role in roles and named and n.w > 0 and n.h > 0:
            return n
    return None


def click(observation: str, role: Roles, name: str | None = None, *, contains: str | None = None,
          fallback: str = "") -> str:
    """An action clicking the node's centre, as an agent reading the tree would; when the
    node is not on screen, ``fallback`` (or a click naming it, which fails visibly)."""
    n = find(observation, role, name, contains=contains)
    if n is None:
        what = f"{role if isinstance(role, str) else '/'.join(role)} {name or contains!r}"
        return fallback or f"raise LookupError({f'no {what} on screen'!r})"
    x, y = n.centre
    # The pointer moves there first: GTK took a click that arrived with no motion before
    # it for the pointer entering, and ignored it, about one time in two. (A glide would
    # cross other menus of an open menu bar and open them.)
    return f"import pyautogui\npyautogui.moveTo({x}, {y})\npyautogui.click({x}, {y})"


def activate(title: str) -> str:
    """An action raising and focusing the visible window whose title matches ``title`` (a
    regular expression), as the window manager does for a click on its title bar."""
    # The application takes the keyboard focus a moment after the window manager activates
    # it: keys sent at once lose their first characters.
    return ("import subprocess, time\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', "
            f"{title!r}, 'windowactivate', '--sync'], check=True)\ntime.sleep(0.5)")


def keys(*names: str) -> str:
    return f"import pyautogui\npyautogui.hotkey({', '.join(map(repr, names))})"


def press(name: str, presses: int = 1) -> str:
    extra = f", presses={presses}" if presses != 1 else ""
    return f"import pyautogui\npyautogui.press({name!r}{extra})"


def write(text: str, interval: float = 0.0) -> str:
    """Type ``text``; ``interval`` seconds between keys (galculator loses a key pressed
    twice in a row at full speed, and still 0.05 s apart: 577 becomes 57)."""
    extra = f", interval={interval}" if interval else ""
    return f"import pyautogui\npyautogui.write({text!r}{extra})"
