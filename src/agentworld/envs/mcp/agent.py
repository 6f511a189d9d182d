"""An LLM agent that plays tool-use episodes through any OpenAI-compatible endpoint.

The env's tool schemas (MCP ``tools/list`` entries, or the search tools) become
OpenAI function tools; each tool call the model makes is sent to the env as one action
and its observation goes back as the tool message. Servers without native tool calling
often answer with ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` text, so
that form is read too. Used by ``agentworld collect mcp|search --agent-model``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from agentworld.envs.base import Env
from agentworld.envs.mcp.episode import ToolTask, action_text, record_turn
from agentworld.trajectory import Provenance, Trajectory, Turn

_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


@dataclass
class AgentConfig:
    model: str
    base_url: str | None = None
    api_key: str = "EMPTY"
    max_turns: int = 12
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MCP-style tool schemas as OpenAI function tools."""
    return [{"type": "function", "function": {
        "name": t["name"], "description": t.get("description", ""),
        "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}} for t in tools]


def _system(ctx: dict[str, Any]) -> str:
    state = ctx.get("initial_state") or ""
    return ("You are an agent that completes tasks by calling the tools you are given. Call one tool at a "
            "time, read its result, and stop calling tools when the task is done; then reply with a short "
            f"summary.\n\n{state}").strip()


def _calls(message: Any) -> list[tuple[str, str, Any]]:
    """(call id, tool name, arguments) from native tool calls or ``<tool_call>`` text."""
    out: list[tuple[str, str, Any]] = []
    for tc in message.tool_calls or []:
        args: Any = tc.function.arguments
        try:
            args = json.loads(args or "{}")
        except json.JSONDecodeError:
            pass  # sent as is: the env answers with the error a malformed call gets
        out.append((tc.id, tc.function.name, args))
    if not out and message.content:
        for raw in _TEXT_CALL.findall(message.content):
            try:
                call = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                out.append((f"call_{uuid.uuid4().hex[:8]}", call["name"], call.get("arguments", {})))
    return out


async def run_agent(env: Env, task: ToolTask, config: AgentConfig, *, trajectory_id: str, seed: int | None = None,
                    environment: str | None = None, client: Any = None) -> Trajectory:
    """Reset ``env`` for ``task`` and let the model act until it stops calling tools."""
    from openai import AsyncOpenAI

    own = client is None
    client = client or AsyncOpenAI(base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s)
    await asyncio.to_thread(env.reset, seed=seed, options=task.reset_options())
    ctx = env.context()
    tools = openai_tools(ctx.get("tools") or [])
    messages: list[dict[str, Any]] = [{"role": "system", "content": _system(ctx)},
                                      {"role": "user", "content": task.description}]
    turns: list[Turn] = []
    final = ""
    try:
        while len(turns) < config.max_turns:
            resp = await client.chat.completions.create(
                model=config.model, messages=messages, tools=tools, temperature=config.temperature,
                max_tokens=config.max_tokens)
            msg = resp.choices[0].message
            calls = _calls(msg)
            if not calls:
                final = msg.content or ""
                break
            messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for cid, name, args in calls]})
            for cid, name, args in calls:
                turn, done = await asyncio.to_thread(record_turn, env, action_text({"name": name, "arguments": args}))
                turns.append(turn)
                messages.append({"role": "tool", "tool_call_id": cid, "content": turn.observation})
                if done or len(turns) >= config.max_turns:
                    break
    finally:
        if own:
            await client.close()
    traj = Trajectory(  # ``final_answer`` is an extra field: the schema keeps unknown fields
        id=trajectory_id, domain=env.domain,
        provenance=Provenance(source="real", environment=environment, task=task.template, seed=seed,
                              agent=config.model),
        turns=turns, final_answer=final, **ctx,
    )
    return traj
