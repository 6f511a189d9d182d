"""An LLM agent that operates the device: it reads each screen and answers one JSON gesture.

Any OpenAI-compatible endpoint (:class:`~agentworld.envs.agent.AgentConfig`). The agent sees
the task and the domain's action space, then each screen as a user message; it replies with
one gesture (``{"action": "tap", "element": 3}``), or ``{"action": "done"}`` when the task
is complete. Gestures go through :class:`~agentworld.envs.record.RecordTurns` like every
other driver's, in the shared text-protocol loop (:mod:`agentworld.envs.text_agent`).
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.android import SPEC
from agentworld.envs.agent import AgentConfig
from agentworld.envs.android.actions import parse_action
from agentworld.envs.android.env import AndroidEnv
from agentworld.envs.record import RecordTurns
from agentworld.envs.text_agent import TextProtocol, play_text_agent
from agentworld.records.trajectory import Provenance, Trajectory

DONE = "done"


def system_prompt(task: str) -> str:
    return (f"You operate an Android phone to do this task: {task}\n\n"
            "Each message shows the current screen as HTML-like elements; the id attributes "
            f"name them. {SPEC.action_space}\n"
            'Reply with exactly one JSON gesture and nothing else. When the task is done, reply {"action": "done"}.')


def read_reply(text: str) -> str | None:
    """The gesture in a reply (the last JSON object with an ``action``), ``done``, or None."""
    decoder = json.JSONDecoder()
    found = None
    i = text.find("{")
    while i >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("action"), str):
            found = value
        i = text.find("{", end)
    if found is None:
        return None
    if found["action"] == DONE:
        return DONE
    action = json.dumps(found, ensure_ascii=False)
    return None if isinstance(parse_action(action), str) else action


async def run_agent(env: AndroidEnv, task: str, config: AgentConfig, *, trajectory_id: str, app: str | None = None,
                    provenance: dict[str, Any] | None = None, client: Any = None) -> Trajectory:
    """Let the model act until it says done, runs out of turns or stops giving gestures."""
    rec = RecordTurns(env)
    protocol = TextProtocol(
        system=system_prompt(task), parse=read_reply, finish={DONE: "done"},
        reminder='That was not a gesture. Reply with one JSON object, e.g. {"action": "tap", "element": 3}, '
                 'or {"action": "done"}.')
    finished = await play_text_agent(rec, protocol, config, reset={"options": {"task": task, "app": app}},
                                     client=client)
    prov = Provenance(**{**(provenance or {}), "agent": config.model, "finished": finished})
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
