"""An LLM agent that operates the device: it reads each screen and answers one JSON gesture.

Any OpenAI-compatible endpoint (:class:`~agentworld.envs.agent.AgentConfig`). The agent sees
the task and the domain's action space, then each screen as a user message; it replies with
one gesture (``{"action": "tap", "element": 3}``), or ``{"action": "done"}`` when the task
is complete. Gestures go through :class:`~agentworld.envs.record.RecordTurns` like every
other driver's; a reply without a gesture is answered with a reminder, and three in a row
end the episode.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agentworld.domains.android import SPEC
from agentworld.envs.agent import AgentConfig, open_client
from agentworld.envs.android.actions import parse_action
from agentworld.envs.android.env import AndroidEnv
from agentworld.envs.record import RecordTurns
from agentworld.records.trajectory import Provenance, Trajectory

MAX_INVALID = 3
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
    own = client is None
    client = client or open_client(config)
    rec = RecordTurns(env)
    try:
        first = await asyncio.to_thread(rec.reset, options={"task": task, "app": app})
        messages = [{"role": "system", "content": system_prompt(task)}, {"role": "user", "content": first.observation}]
        invalid, finished = 0, "max_steps"
        while len(rec.turns) < config.max_turns:
            reply = await client.chat.completions.create(model=config.model, messages=messages,
                                                         temperature=config.temperature, max_tokens=config.max_tokens)
            text = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": text})
            action = read_reply(text)
            if action == DONE:
                finished = "done"
                break
            if action is None:
                invalid += 1
                if invalid >= MAX_INVALID:
                    finished = "invalid_actions"
                    break
                messages.append({"role": "user", "content": 'That was not a gesture. Reply with one JSON object, '
                                 'e.g. {"action": "tap", "element": 3}, or {"action": "done"}.'})
                continue
            invalid = 0
            res = await asyncio.to_thread(rec.step, action)
            messages.append({"role": "user", "content": res.observation})
            if res.terminated or res.truncated:
                finished = "terminated"
                break
        prov = Provenance(**{**(provenance or {}), "agent": config.model, "finished": finished})
        return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
    finally:
        if own:
            await client.close()
