"""One LLM agent that plays tool-calling episodes through any OpenAI-compatible endpoint.

The env's tool schemas (``env.context().tools``: MCP ``tools/list`` entries or OpenAI
function schemas) are offered as OpenAI function tools; every call the model makes is sent
to the env as one action (canonical ``{"name", "arguments"}`` JSON) and recorded as one
turn. Servers without native tool calling often answer with
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` or a bare JSON call, so those are
read too and their results go back as ``<tool_response>`` user messages. With
``native_tools=False`` the agent speaks only that text protocol (schemas in the system
prompt) for servers that reject ``tools`` and ``tool`` messages. Domain modules supply the
prompts and provenance; the terminal driver reuses :class:`AgentConfig` and
:func:`open_client` for its keystroke protocol. Turns are recorded by
:class:`~agentworld.envs.record.RecordTurns`, as in every other driver.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld.envs.base import Env
from agentworld.envs.record import RecordTurns
from agentworld.records.trajectory import Provenance, SimContext, Trajectory
from agentworld.tool_calls import ToolCallError, decode_arguments

_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)

Call = tuple[str, str, Any]
"""(call id, tool name, arguments: a dict, or the raw text when it was not valid JSON)."""


@dataclass
class AgentConfig:
    """The agent's endpoint, sampling and budget."""

    model: str
    base_url: str | None = None
    api_key: str = "EMPTY"
    max_turns: int = 12
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 120.0
    native_tools: bool = True
    """False: tool schemas in the prompt, calls and results as tagged text."""
    max_invalid: int = 3
    """Consecutive replies without a usable action before a text-protocol episode ends."""


def open_client(config: AgentConfig) -> Any:
    """An ``openai.AsyncOpenAI`` client for the configured endpoint."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=config.base_url, api_key=config.api_key or "EMPTY", timeout=config.timeout_s)


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool schemas (MCP ``inputSchema`` or OpenAI ``parameters`` style) as OpenAI function tools."""
    return [{"type": "function", "function": {
        "name": t["name"], "description": t.get("description", ""),
        "parameters": t.get("inputSchema") or t.get("parameters") or {"type": "object", "properties": {}}}}
        for t in tools]


def tool_response(observation: str) -> str:
    """How a tool result is handed back in the text protocol."""
    return f"<tool_response>\n{observation}\n</tool_response>"


def action_text(name: str, arguments: Any) -> str:
    """The recorded action: a canonical tool call; malformed arguments stay as the text the model sent."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _arguments(raw: Any) -> Any:
    try:
        return decode_arguments(raw)
    except ToolCallError:
        return raw  # sent as is: the env answers with the error a malformed call gets


def text_calls(content: str) -> list[tuple[str, Any]]:
    """(tool name, arguments) of the calls written as text: ``<tool_call>`` blocks, else one bare JSON call."""
    candidates = _TEXT_CALL.findall(content)
    if not candidates and (start := content.find("{")) >= 0:
        candidates = [content[start:content.rfind("}") + 1]]
    out: list[tuple[str, Any]] = []
    for raw in candidates:
        try:
            call = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("arguments", {}), dict | str):
            out.append((call["name"], _arguments(call.get("arguments", {}))))
    return out


def tool_calls(message: Any) -> list[Call]:
    """The calls in an assistant message: native tool calls, else those written as text."""
    native = [(tc.id, tc.function.name, _arguments(tc.function.arguments)) for tc in message.tool_calls or []]
    if native or not message.content:
        return native
    return [(f"call_{uuid.uuid4().hex[:8]}", name, args) for name, args in text_calls(message.content)]


def system_prompt(instructions: str, tools: list[dict[str, Any]], native: bool) -> str:
    """The domain's instructions, plus the schemas and the call format when tools go as text."""
    if native:
        return instructions
    return (f"{instructions}\n\nTools (JSON schemas):\n{json.dumps(tools, ensure_ascii=False)}\n\n"
            'To call a tool, reply with <tool_call>{"name": ..., "arguments": {...}}</tool_call>. '
            "Each result comes back inside <tool_response>...</tool_response>.")


Brief = Callable[[str, SimContext], tuple[str, str]]
"""(reset observation, env context) -> (system instructions, first user message)."""


async def run_agent(env: Env, config: AgentConfig, *, brief: Brief, provenance: Provenance, trajectory_id: str,
                    seed: int | None = None, options: dict[str, Any] | None = None,
                    canonical: Callable[[str, Any], str] = action_text, client: Any = None) -> Trajectory:
    """Reset ``env`` and let the model call tools until it answers without one or runs out of turns."""
    own = client is None
    client = client or open_client(config)
    rec = RecordTurns(env)
    first = await asyncio.to_thread(rec.reset, seed=seed, options=options)
    ctx = rec.context()
    native = config.native_tools
    extra: dict[str, Any] = {"tools": openai_tools(ctx.tools or [])} if native else {}
    instructions, task = brief(first.observation, ctx)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(instructions, ctx.tools or [], native)},
        {"role": "user", "content": task}]
    turns = rec.turns
    final = ""
    try:
        while len(turns) < config.max_turns:
            resp = await client.chat.completions.create(
                model=config.model, messages=messages, temperature=config.temperature,
                max_tokens=config.max_tokens, **extra)
            msg = resp.choices[0].message
            calls = tool_calls(msg)
            if not calls:
                final = msg.content or ""
                break
            # Calls the server parsed go back as tool messages; calls it left as text go back as text.
            as_tools = native and bool(msg.tool_calls)
            assistant: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
            if as_tools:
                assistant["tool_calls"] = [{"id": cid, "type": "function", "function": {
                    "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                    for cid, name, args in calls]
            messages.append(assistant)
            done = False
            for cid, name, args in calls:
                res = await asyncio.to_thread(rec.step, canonical(name, args))
                done = res.terminated or res.truncated
                messages.append({"role": "tool", "tool_call_id": cid, "content": res.observation} if as_tools else
                                {"role": "user", "content": tool_response(res.observation)})
                if done or len(turns) >= config.max_turns:
                    break
            if done:
                break
    finally:
        if own:
            await client.close()
    return rec.trajectory(trajectory_id=trajectory_id, provenance=provenance, final_answer=final)
