"""The repair agent: tool calling on any OpenAI-compatible endpoint in a sandboxed repository.

The loop and the tool-call protocols (native calls, ``<tool_call>`` text or a bare JSON
call) live in :mod:`agentworld.envs.agent`; this module adds the engineer's instructions,
the task text (task plus the repository's initial state), the canonical action from
:func:`agentworld.envs.swe.tools.tool_call` and the provenance. The episode ends when the
agent answers without a tool call, or at ``max_turns``.
"""

from __future__ import annotations

from typing import Any

from agentworld.envs.agent import AgentConfig, action_text, text_calls
from agentworld.envs.agent import run_agent as run_tool_agent
from agentworld.envs.swe.env import SweEnv
from agentworld.envs.swe.tools import tool_call
from agentworld.records.trajectory import Provenance, SimContext, Trajectory

SYSTEM = (
    "You are a software engineer working in a sandboxed Linux machine. Use the tools to "
    "inspect the repository, find the bug, fix it with a minimal edit and run the tests. "
    "Call exactly one tool per message. When the tests pass, reply with a short summary "
    "and no tool call."
)
ENVIRONMENT = "swe-v1"


def agent_config(model: str, **overrides: Any) -> AgentConfig:
    """The repair agent's defaults: longer episodes and answers, a little sampling."""
    return AgentConfig(model=model, **{"max_turns": 30, "temperature": 0.2, "max_tokens": 2048, **overrides})


def canonical_action(name: str, arguments: Any) -> str:
    """The recorded action; arguments that are not a JSON object stay as the model sent them."""
    return tool_call(name, **arguments) if isinstance(arguments, dict) else action_text(name, arguments)


def text_tool_call(content: str) -> str | None:
    """The first tool call written as text (``<tool_call>`` block or a bare JSON call), as action text."""
    calls = text_calls(content)
    return canonical_action(*calls[0]) if calls else None


async def run_agent(env: SweEnv, config: AgentConfig, *, seed: int, trajectory_id: str,
                    options: dict | None = None, client: Any = None) -> Trajectory:
    """Reset ``env`` with ``seed`` and let the model work until it stops or runs out of turns."""

    def brief(task: str, ctx: SimContext) -> tuple[str, str]:
        return SYSTEM, f"{task}\n\n{ctx.initial_state or ''}"

    provenance = Provenance(source="real", environment=ENVIRONMENT, agent=config.model, seed=seed)
    return await run_tool_agent(env, config, brief=brief, provenance=provenance, trajectory_id=trajectory_id,
                                seed=seed, options=options, canonical=canonical_action, client=client)

