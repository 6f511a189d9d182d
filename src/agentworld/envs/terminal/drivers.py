"""Who types into the terminal: the scripted driver or an LLM agent.

The scripted driver plays a task template's own actions. The agent driver lets any
model behind an OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, ``agentworld
serve``, hosted APIs) choose each action from the screen it sees. Both return
trajectories recorded from the real environment.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentworld.domains import get_domain
from agentworld.domains.terminal.keys import ActionError, parse_action
from agentworld.envs.agent import AgentConfig as ToolAgentConfig
from agentworld.envs.agent import open_client
from agentworld.envs.record import RecordTurns, record_episode
from agentworld.envs.terminal.env import TerminalEnv
from agentworld.envs.terminal.task import TerminalTask
from agentworld.parsing import repair_json
from agentworld.records.trajectory import Provenance, Trajectory

ENVIRONMENT = "terminal/debian-bookworm"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _provenance(task: TerminalTask, seed: int, agent: str) -> Provenance:
    return Provenance(source="real", environment=ENVIRONMENT, task=task.name, seed=seed, agent=agent,
                      created_at=datetime.now(UTC).isoformat(timespec="seconds"))


def run_scripted(env: TerminalEnv, task: TerminalTask, *, seed: int, trajectory_id: str) -> Trajectory:
    """Play ``task.actions`` in a fresh episode and record every turn."""
    return record_episode(env, task.actions, trajectory_id=trajectory_id, seed=seed, options={"task": task},
                          provenance=_provenance(task, seed, "scripted"))


@dataclass
class AgentConfig(ToolAgentConfig):
    """The shared agent config with the terminal's budget; actions are keystrokes, not tool calls."""

    max_turns: int = 15
    temperature: float = 0.2
    max_tokens: int = 512
    max_invalid: int = 3
    """Consecutive replies without a usable action before the episode ends."""


def agent_system_prompt(task: TerminalTask) -> str:
    spec = get_domain("terminal")
    return (
        "You operate a Linux terminal to complete a task. You see the terminal screen after each of "
        f"your actions.\n\nTask: {task.description}\n\nAction format: {spec.action_space}\n\n"
        "Reply with exactly one action: the JSON list only, no explanation. When the task is complete, "
        'reply with {"done": true}.'
    )


def parse_agent_reply(text: str) -> str | None:
    """The action JSON in a model's reply, ``""`` when it says it is done, None when unusable."""
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    if body.upper() in ("DONE", '{"DONE": TRUE}'):
        return ""
    candidates = [body]
    first, last = body.find("["), body.rfind("]")
    if 0 <= first < last:
        candidates.insert(0, body[first:last + 1])
    for cand in candidates:
        try:
            data: Any = json.loads(cand, strict=False)
        except json.JSONDecodeError:
            try:
                data = repair_json(cand)
            except ValueError:
                continue
        if isinstance(data, dict) and data.get("done") is True:
            return ""
        if isinstance(data, tuple):
            data = list(data)
        try:
            batches = parse_action(data)
        except ActionError:
            continue
        return json.dumps([{"keystrokes": b.keystrokes, "duration": b.duration} for b in batches],
                          ensure_ascii=False)
    return None


async def run_agent(env: TerminalEnv, task: TerminalTask, config: AgentConfig, *, seed: int, trajectory_id: str,
                    client: Any = None) -> Trajectory:
    """Let the model act until it says done, runs out of steps, or stops giving actions."""
    own = client is None
    client = client or open_client(config)
    rec = RecordTurns(env)
    try:
        first = await asyncio.to_thread(rec.reset, seed=seed, options={"task": task})
        messages: list[dict[str, str]] = [{"role": "system", "content": agent_system_prompt(task)},
                                          {"role": "user", "content": first.observation}]
        turns = rec.turns
        invalid = 0
        finished = "max_steps"
        while len(turns) < config.max_turns:
            reply = await client.chat.completions.create(
                model=config.model, messages=messages, temperature=config.temperature, max_tokens=config.max_tokens)
            text = reply.choices[0].message.content or ""
            action = parse_agent_reply(text)
            messages.append({"role": "assistant", "content": text})
            if action == "":
                finished = "done"
                break
            if action is None:
                invalid += 1
                if invalid >= config.max_invalid:
                    finished = "invalid_actions"
                    break
                messages.append({"role": "user", "content": "That was not a valid action. Reply with the JSON "
                                 'list only, e.g. [{"keystrokes": "ls\\n", "duration": 1}].'})
                continue
            invalid = 0
            res = await asyncio.to_thread(rec.step, action)
            messages.append({"role": "user", "content": res.observation})
            if res.terminated or res.truncated:
                finished = "terminated"
                break
        prov = _provenance(task, seed, config.model)
        prov.finished = finished
        return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
    finally:
        if own:
            await client.close()
