"""Terminal task instances and the registry of seeded task templates."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agentworld.domains.terminal.keys import action_json


@dataclass(frozen=True)
class TerminalTask:
    """One concrete task: the machine's starting state and a scripted way through it."""

    name: str
    description: str
    """What the agent is asked to do (the trajectory's task description)."""
    files: dict[str, str] = field(default_factory=dict)
    """Path (absolute, or relative to /workspace) -> content, written before the session."""
    modes: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables of the shell."""
    setup: str = ""
    """Shell script run before the session starts (git history, users, ...); not recorded."""
    actions: list[str] = field(default_factory=list)
    """The scripted driver's actions (terminal action JSON)."""
    category: str = "misc"
    capabilities: tuple[str, ...] = ()
    """Capabilities root holds inside the sandbox's own user namespace: none by default
    (CapEff 0); user-management tasks ask for ``USER_ADMIN_CAPABILITIES``."""


Builder = Callable[[random.Random], TerminalTask]




def cmd(line: str, duration: float = 10.0) -> str:
    """An action that types ``line`` and presses Enter (the step ends early when the prompt is back)."""
    return action_json((line + "\n", duration))


def keys(*batches: tuple[str, float]) -> str:
    return action_json(*batches)
