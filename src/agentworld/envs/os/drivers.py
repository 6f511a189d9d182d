"""Who acts on the desktop: a task's script or an LLM agent (code-action protocol).

Both record through :class:`~agentworld.envs.record.RecordTurns` and drop the turns
whose state did not change (SPEC section 5: the observation equals the one before, up
to whitespace): the state chain reads the same without them. A script's step must change
something unless the script marked it (:func:`~agentworld.envs.os.task.maybe`), and its
episode ends with the task's self-check: a lost action or an effect that did not happen
fails the episode (:class:`TaskCheckFailed`, an ``UnchangedStep``) instead of being recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentworld.domains import get_domain
from agentworld.envs.agent import AgentConfig as ToolAgentConfig
from agentworld.envs.os.env import SPECIAL, DesktopEnv
from agentworld.envs.os.task import DesktopTask, Outcome, expects_change
from agentworld.envs.record import RecordTurns, play_script
from agentworld.envs.text_agent import TextProtocol, play_text_agent
from agentworld.records.trajectory import Provenance, Trajectory

ENVIRONMENT = "os/debian-bookworm-xvfb"
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def _provenance(task: DesktopTask, seed: int, agent: str) -> Provenance:
    return Provenance(source="real", environment=ENVIRONMENT, task=task.name, seed=seed, agent=agent,
                      created_at=datetime.now(UTC).isoformat(timespec="seconds"))


class TaskCheckFailed(RuntimeError):
    """A scripted episode ended without the effect its task states (``DesktopTask.check``)."""


def run_scripted(env: DesktopEnv, task: DesktopTask, *, seed: int, trajectory_id: str,
                 max_steps: int = 40) -> Trajectory:
    """Play the task's script in a fresh episode, record the turns that changed something,
    then run the task's check (raises :class:`TaskCheckFailed`, or
    :class:`~agentworld.envs.record.UnchangedStep` for a step that changed nothing)."""
    if task.script is None:
        raise ValueError(f"os task {task.name!r} has no script")
    rec = RecordTurns(env, drop_unchanged=True, expect_change=expects_change)
    first = rec.reset(seed=seed, options={"task": task}).observation
    play_script(rec, task.script(first), max_steps=max_steps)
    if task.check is not None and (reason := task.check(outcome(env, rec.turns[-1].observation if rec.turns else first))):
        raise TaskCheckFailed(f"os task {task.name} (seed {seed}): {reason}")
    prov = _provenance(task, seed, "scripted")
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)


def outcome(env: DesktopEnv, observation: str) -> Outcome:
    """The episode's end as a task's check sees it: ``observation``, the sandbox's files and
    read-only programs run in the session (not recorded)."""

    def read(path: str) -> str | None:
        assert env.sandbox is not None
        try:
            return env.sandbox.read_file(path if path.startswith("/") else f"/workspace/{path}")
        except FileNotFoundError:
            return None

    def probe(code: str) -> str:
        res = env.step(code)
        if res.info.get("error"):
            raise RuntimeError(f"the check's probe failed: {res.info['error']}")
        return res.observation

    return Outcome(observation, read, probe)


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
