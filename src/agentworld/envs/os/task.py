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


Builder = Callable[[random.Random], DesktopTask]




def find(observation: str, role: str, name: str | None = None, *, contains: str | None = None) -> Node | None:
    """The first node with ``role`` and ``name`` (or a name containing ``contains``) on screen."""
    for n in tree_nodes(observation):
        named = (name is None or n.name == name) and (contains is None or contains in n.name)
        if n.role == role and named and n.w > 0 and n.h > 0:
            return n
    return None


def click(observation: str, role: str, name: str | None = None, *, contains: str | None = None,
          fallback: str = "") -> str:
    """An action clicking the node's centre, as an agent reading the tree would; when the
    node is not on screen, ``fallback`` (or a click naming it, which fails visibly)."""
    n = find(observation, role, name, contains=contains)
    if n is None:
        what = f"{role} {name or contains!r}"
        return fallback or f"raise LookupError({f'no {what} on screen'!r})"
    x, y = n.centre
    return f"import pyautogui\npyautogui.click({x}, {y})"


def keys(*names: str) -> str:
    return f"import pyautogui\npyautogui.hotkey({', '.join(map(repr, names))})"


def press(name: str, presses: int = 1) -> str:
    extra = f", presses={presses}" if presses != 1 else ""
    return f"import pyautogui\npyautogui.press({name!r}{extra})"


def write(text: str) -> str:
    return f"import pyautogui\npyautogui.write({text!r})"
