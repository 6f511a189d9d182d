"""Who types into the terminal: the scripted driver or an LLM agent.

The scripted driver plays a task template's own actions. The agent driver lets any
model behind an OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, ``agentworld
serve``, hosted APIs) choose each action from the screen it sees. Both return
trajectories recorded from the real environment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentworld.domains import get_domain
from agentworld.domains.terminal.keys import ActionError, parse_action
from agentworld.envs.agent import AgentConfig as ToolAgentConfig
from agentworld.envs.record import RecordTurns, record_episode
from agentworld.envs.terminal.env import TerminalEnv
from agentworld.envs.terminal.task import TerminalTask
from agentworld.envs.text_agent import TextProtocol, play_text_agent
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
    rec = RecordTurns(env)
    protocol = TextProtocol(
        system=agent_system_prompt(task), parse=parse_agent_reply, finish={"": "done"},
        reminder='That was not a valid action. Reply with the JSON list only, e.g. [{"keystrokes": "ls\\n", "duration": 1}].')
    finished = await play_text_agent(rec, protocol, config, reset={"seed": seed, "options": {"task": task}},
                                     client=client)
    prov = _provenance(task, seed, config.model)
    prov.finished = finished
    return rec.trajectory(trajectory_id=trajectory_id, provenance=prov)
