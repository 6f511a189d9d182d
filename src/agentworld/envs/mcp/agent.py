"""The tool-use agent for MCP servers and the offline search engine.

The loop, the tool-call protocols and the config live in :mod:`agentworld.envs.agent`;
this module adds what is particular to tool-use tasks: the instructions, the task text
and the provenance. Used by ``agentworld collect mcp|search --agent openai:MODEL@URL``.
"""

from __future__ import annotations

from typing import Any

from agentworld.envs.agent import AgentConfig
from agentworld.envs.agent import run_agent as run_tool_agent
from agentworld.envs.base import Env
from agentworld.envs.mcp.episode import ToolTask
from agentworld.records.trajectory import Provenance, SimContext, Trajectory

INSTRUCTIONS = ("You are an agent that completes tasks by calling the tools you are given. Call one tool at a "
                "time, read its result, and stop calling tools when the task is done; then reply with a short "
                "summary.")


async def run_agent(env: Env, task: ToolTask, config: AgentConfig, *, trajectory_id: str, seed: int | None = None,
                    environment: str | None = None, client: Any = None) -> Trajectory:
    """Reset ``env`` for ``task`` and let the model act until it stops calling tools."""

    def brief(_: str, ctx: SimContext) -> tuple[str, str]:
        return f"{INSTRUCTIONS}\n\n{ctx.initial_state or ''}".strip(), task.description

    provenance = Provenance(source="real", environment=environment, task=task.template, seed=seed, agent=config.model)
    return await run_tool_agent(env, config, brief=brief, provenance=provenance, trajectory_id=trajectory_id,
                                seed=seed, options=task.reset_options(), client=client)
