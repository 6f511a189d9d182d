"""Web episodes: a task, a policy that reads each page state and acts, a recorder.

A :class:`WebTask` carries the reset options (start page, tabs, MiniWoB task) and a scripted
policy: a generator that yields action strings (``click('12')``) and receives each
observation back, so it can find the element ids of the page it is on. The LLM agent in
:func:`run_agent` plays the same role through the shared client of :mod:`agentworld.envs.agent`,
with a text protocol: the model answers with one action call.

A turn whose page state did not change (the same observation as before it, up to
whitespace: a hover that shows nothing, a no-op) is dropped from the recording, as the
data filters do for GUI domains (SPEC section 5); the action still ran.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator
from typing import Any

from agentworld.domains import get_domain
from agentworld.envs.agent import AgentConfig
from agentworld.envs.base import Env
from agentworld.envs.record import RecordTurns, play_script
from agentworld.envs.templates import ScriptedTask
from agentworld.envs.text_agent import TextProtocol, play_text_agent
from agentworld.envs.web.actions import parse_action
from agentworld.records.trajectory import Provenance, Trajectory

Script = Callable[[str], Generator[str, str, None]]
"""Called with the first observation; yields actions and receives each observation back."""
ENVIRONMENT = "web/chromium+loopback-sites"


WebTask = ScriptedTask[Script]
"""One seeded task: what the agent is asked, where the browser starts, a scripted solution."""


class EpisodeTimeout(TimeoutError):
    """An episode ran past its time budget (checked between steps; each step is bounded by
    the browser's own timeouts)."""


def _check_deadline(deadline: float | None, limit_s: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise EpisodeTimeout(f"the episode ran past its {limit_s:.0f} s budget")


def run_scripted(env: Env, task: WebTask, *, trajectory_id: str, seed: int | None = None,
                 max_turns: int = 30, timeout_s: float | None = None) -> Trajectory:
    """Reset ``env`` for ``task``, play its script and record every turn that changed the page;
    :class:`EpisodeTimeout` past ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    if task.script is None:
        raise ValueError(f"task {task.template!r} has no scripted policy")
    rec = RecordTurns(env, drop_unchanged=True)
    play_script(rec, task.script(rec.reset(seed=seed, options=task.reset_options()).observation), max_steps=max_turns,
                before_step=lambda: _check_deadline(deadline, timeout_s))
    prov = Provenance(source="real", environment=ENVIRONMENT, task=task.template, seed=seed, agent="scripted")
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)


# -- the LLM agent ------------------------------------------------------------------------------
_CALL = re.compile(r"\b([a-z_]+)\((.*)\)\s*$")


def agent_instructions() -> str:
    spec = get_domain("web")
    return ("You are a web agent. Each message shows the browser's page state: URL, title, tabs, the focused "
            "element and the accessibility tree, where every element has an id in brackets. "
            f"{spec.action_space} Also keyboard_type(text). Reply with exactly one action call on the last line, "
            "e.g. click('12'). When the task is done, reply DONE.")


def parse_reply(text: str) -> str | None:
    """The action on the reply's last call-shaped line; ``""`` when the model says it is done;
    None when there is neither."""
    lines = [ln.strip().strip("`") for ln in text.strip().splitlines() if ln.strip().strip("`")]
    for line in reversed(lines):
        m = _CALL.search(line)
        if m and not isinstance(parse_action(m.group(0)), str):
            return m.group(0)
    return "" if lines and "DONE" in lines[-1].upper() else None


async def run_agent(env: Env, task: WebTask, config: AgentConfig, *, trajectory_id: str, seed: int | None = None,
                    client: Any = None, timeout_s: float | None = None) -> Trajectory:
    """Let the model act until it says DONE, the episode ends, or it runs out of turns;
    :class:`EpisodeTimeout` past ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s if timeout_s else None
    rec = RecordTurns(env, drop_unchanged=True)
    protocol = TextProtocol(
        system=agent_instructions(), parse=parse_reply, finish={"": "done"},
        reminder="Reply with one action call, e.g. click('12'), or DONE.",
        opening=lambda first: f"Task: {task.description}\n\n{first}")
    finished = await play_text_agent(rec, protocol, config, reset={"seed": seed, "options": task.reset_options()},
                                     client=client, before_turn=lambda: _check_deadline(deadline, timeout_s))
    prov = Provenance(source="real", environment=ENVIRONMENT, task=task.template, seed=seed, agent=config.model)
    prov.finished = finished
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
