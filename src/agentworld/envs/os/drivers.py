"""Who acts on the desktop: a task's script or an LLM agent (code-action protocol).

Both record through :class:`~agentworld.envs.record.RecordTurns` and drop the turns
whose state did not change (SPEC section 5: the observation equals the one before, up
to whitespace): the state chain reads the same without them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentworld.domains import get_domain
from agentworld.envs.agent import AgentConfig as ToolAgentConfig
from agentworld.envs.os.env import SPECIAL, DesktopEnv
from agentworld.envs.os.task import DesktopTask
from agentworld.envs.record import RecordTurns, play_script
from agentworld.envs.text_agent import TextProtocol, play_text_agent
from agentworld.records.trajectory import Provenance, Trajectory

ENVIRONMENT = "os/debian-bookworm-xvfb"
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def _provenance(task: DesktopTask, seed: int, agent: str) -> Provenance:
    return Provenance(source="real", environment=ENVIRONMENT, task=task.name, seed=seed, agent=agent,
                      created_at=datetime.now(UTC).isoformat(timespec="seconds"))


def run_scripted(env: DesktopEnv, task: DesktopTask, *, seed: int, trajectory_id: str,
                 max_steps: int = 40) -> Trajectory:
    """Play the task's script in a fresh episode and record the turns that changed something."""
    if task.script is None:
        raise ValueError(f"os task {task.name!r} has no script")
    rec = RecordTurns(env, drop_unchanged=True)
    play_script(rec, task.script(rec.reset(seed=seed, options={"task": task}).observation), max_steps=max_steps)
    prov = _provenance(task, seed, "scripted")
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)


@dataclass
class AgentConfig(ToolAgentConfig):
    """The shared agent config with the desktop's budget; actions are Python programs."""

    max_turns: int = 15
    temperature: float = 0.2
    max_tokens: int = 1024


def agent_system_prompt(task: DesktopTask) -> str:
    spec = get_domain("os")
    return (
        "You operate a Linux desktop to complete a task. After each action you see the desktop's "
        "accessibility tree (role, name, position, size, states), the window list and the focus.\n\n"
        f"Task: {task.description}\n\nAction format: {spec.action_space} The screen is 1280x800; "
        "`xdotool` is installed.\n\nReply with exactly one action: a Python program in a ```python block, "
        "or WAIT. When the task is complete, reply DONE; if it cannot be done, reply FAIL."
    )


def parse_agent_reply(text: str) -> str | None:
    """The program in a model's reply, a special action word, or None when there is none."""
    body = text.strip()
    if (word := body.upper().strip("`. ")) in SPECIAL:
        return word
    blocks = _FENCE.findall(body)
    if blocks:
        code = blocks[-1].strip()
        return code or None
    if "pyautogui" in body or "xdotool" in body:
        return body  # a bare program
    return None


async def run_agent(env: DesktopEnv, task: DesktopTask, config: AgentConfig, *, seed: int, trajectory_id: str,
                    client: Any = None) -> Trajectory:
    """Let the model act until it says DONE/FAIL, runs out of turns, or stops giving actions."""
    rec = RecordTurns(env, drop_unchanged=True)
    protocol = TextProtocol(
        system=agent_system_prompt(task), parse=parse_agent_reply, finish={"DONE": "done", "FAIL": "fail"},
        reminder="That was not a valid action. Reply with one Python program in a ```python block (pyautogui), "
                 "or WAIT, DONE or FAIL.")
    finished = await play_text_agent(rec, protocol, config, reset={"seed": seed, "options": {"task": task}},
                                     client=client)
    prov = _provenance(task, seed, config.model)
    prov.finished = finished
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
