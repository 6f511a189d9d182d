"""Tool-use episodes (mcp, search): a task, a policy that reacts to observations, a recorder.

A task carries the reset options (workspace, servers, corpus...) and a scripted policy:
a generator that yields tool calls ``{"name", "arguments"}`` and receives each
observation back, so later calls can use earlier results (a commit hash from a log, a
URL from a result list). The LLM-agent driver in :mod:`.agent` plays the same role with
a model instead of a script.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from agentworld.envs.base import Env
from agentworld.trajectory import Provenance, Trajectory, Turn

ToolCall = dict[str, Any]
Script = Callable[[], Generator[ToolCall, str, None]]


@dataclass
class ToolTask:
    """One seeded task: what the agent is asked, how the env is set up, a scripted solution."""

    template: str
    description: str
    options: dict[str, Any]
    script: Script | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def reset_options(self) -> dict[str, Any]:
        return dict(self.options, task=self.description)


def action_text(call: ToolCall) -> str:
    """The action as recorded: the tool call as compact JSON, name first."""
    return json.dumps({"name": call["name"], "arguments": call.get("arguments", {})}, ensure_ascii=False)


def record_turn(env: Env, action: str) -> tuple[Turn, bool]:
    t0 = time.time()
    res = env.step(action)
    info = {k: v for k, v in res.info.items() if isinstance(v, str | int | float | bool | type(None))}
    turn = Turn(action=action, observation=res.observation, started_at=t0,
                duration_s=time.time() - t0, metadata=info)
    return turn, res.terminated or res.truncated


def run_scripted(env: Env, task: ToolTask, *, trajectory_id: str, seed: int | None = None,
                 environment: str | None = None, max_turns: int = 40) -> Trajectory:
    """Reset ``env`` for ``task``, play its script and record every turn."""
    if task.script is None:
        raise ValueError(f"task {task.template!r} has no scripted policy")
    env.reset(seed=seed, options=task.reset_options())
    turns: list[Turn] = []
    policy = task.script()
    try:
        call = next(policy)
        while len(turns) < max_turns:
            turn, done = record_turn(env, action_text(call))
            turns.append(turn)
            if done:
                break
            call = policy.send(turn.observation)
    except StopIteration:
        pass
    return Trajectory(
        id=trajectory_id,
        domain=env.domain,
        provenance=Provenance(source="real", environment=environment, task=task.template, seed=seed,
                              agent="scripted"),
        turns=turns,
        **env.context(),
    )
