"""An LLM agent that plays tool-use episodes through any OpenAI-compatible endpoint.

The env's tool schemas (MCP ``tools/list`` entries, or the search tools) become
OpenAI function tools; each tool call the model makes is sent to the env as one action
and its observation goes back as the tool message. Servers without native tool calling
often answer with ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` text, so
that form is read too; with ``native_tools=False`` the driver speaks only that text
protocol (schemas in the system prompt, results back as ``<tool_response>`` user
messages) for servers that reject ``tools`` and ``tool`` messages. Used by
``agentworld collect mcp|search --agent-model``.
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
    native_tools: bool = True
    """False: tool schemas in the prompt, calls and results as tagged text."""


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """MCP-style tool schemas as OpenAI function tools."""
    return [{"type": "function", "function": {
        "name": t["name"], "description": t.get("description", ""),
        "parameters": t.get("inputSchema") or {"type": "object", "properties": {}}}} for t in tools]


def _system(ctx: dict[str, Any], native: bool) -> str:
    state = ctx.get("initial_state") or ""
    text = ("You are an agent that completes tasks by calling the tools you are given. Call one tool at a "
            "time, read its result, and stop calling tools when the task is done; then reply with a short "
            f"summary.\n\n{state}").strip()
    if not native:
        text += ("\n\nTools (JSON schemas):\n" + json.dumps(ctx.get("tools") or [], ensure_ascii=False) +
                 '\n\nTo call a tool, reply with <tool_call>{"name": ..., "arguments": {...}}</tool_call>. '
                 "Each result comes back inside <tool_response>...</tool_response>.")
    return text


def tool_response(observation: str) -> str:
    """How a tool result is handed back in the text protocol."""
    return f"<tool_response>\n{observation}\n</tool_response>"


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
    native = config.native_tools
    extra: dict[str, Any] = {"tools": openai_tools(ctx.get("tools") or [])} if native else {}
    messages: list[dict[str, Any]] = [{"role": "system", "content": _system(ctx, native)},
                                      {"role": "user", "content": task.description}]
    turns: list[Turn] = []
    final = ""
    try:
        while len(turns) < config.max_turns:
            resp = await client.chat.completions.create(
                model=config.model, messages=messages, temperature=config.temperature,
                max_tokens=config.max_tokens, **extra)
            msg = resp.choices[0].message
            calls = _calls(msg)
            if not calls:
                final = msg.content or ""
                break
            if native:
                messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, name, args in calls]})
            else:
                messages.append({"role": "assistant", "content": msg.content or ""})
            for cid, name, args in calls:
                turn, done = await asyncio.to_thread(record_turn, env, action_text({"name": name, "arguments": args}))
                turns.append(turn)
                messages.append({"role": "tool", "tool_call_id": cid, "content": turn.observation} if native else
                                {"role": "user", "content": tool_response(turn.observation)})
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
