"""Tool-use episodes (mcp, search): a task, a policy that reacts to observations, a recorder.

A task carries the reset options (workspace, servers, corpus...) and a scripted policy:
a generator that yields tool calls ``{"name", "arguments"}`` and receives each
observation back, so later calls can use earlier results (a commit hash from a log, a
URL from a result list). The LLM-agent driver in :mod:`.agent` plays the same role with
a model instead of a script.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import Any

from agentworld.envs.base import Env
from agentworld.envs.record import RecordTurns
from agentworld.envs.templates import ScriptedTask
from agentworld.records.trajectory import Provenance, Trajectory

ToolCall = dict[str, Any]
Script = Callable[[], Generator[ToolCall, str, None]]


ToolTask = ScriptedTask[Script]
"""One seeded task: what the agent is asked, how the env is set up, a scripted solution."""


def action_text(call: ToolCall) -> str:
    """The action as recorded: the tool call as compact JSON, name first."""
    return json.dumps({"name": call["name"], "arguments": call.get("arguments", {})}, ensure_ascii=False)


def run_scripted(env: Env, task: ToolTask, *, trajectory_id: str, seed: int | None = None,
                 environment: str | None = None, max_turns: int = 40) -> Trajectory:
    """Reset ``env`` for ``task``, play its script and record every turn."""
    if task.script is None:
        raise ValueError(f"task {task.template!r} has no scripted policy")
    rec = RecordTurns(env)
    rec.reset(seed=seed, options=task.reset_options())
    policy = task.script()
    try:
        call = next(policy)
        while len(rec.turns) < max_turns:
            res = rec.step(action_text(call))
            if res.terminated or res.truncated:
                break
            call = policy.send(res.observation)
    except StopIteration:
        pass
    return rec.trajectory(trajectory_id=trajectory_id, provenance=Provenance(
        source="real", environment=environment, task=task.template, seed=seed, agent="scripted"))
