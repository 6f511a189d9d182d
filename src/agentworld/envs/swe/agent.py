"""An LLM agent that repairs the repository through tool calling on any OpenAI-compatible endpoint.

The agent gets the task and the environment's tool schemas as ``tools``; every tool call
it makes becomes one recorded action (the JSON text the world model sees) and the tool's
printed output goes back to it as the ``tool`` message. Servers that do not parse tool
calls return them as text; a ``<tool_call>{...}</tool_call>`` block or a bare
``{"name": ..., "arguments": ...}`` object in the answer is taken as the call, and its
output goes back as a user message. The episode ends when the agent answers without a
tool call, or at ``max_steps``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from agentworld.envs.swe.env import SweEnv
from agentworld.envs.swe.tools import TOOLS, tool_call
from agentworld.trajectory import Provenance, Trajectory, Turn

SYSTEM = (
    "You are a software engineer working in a sandboxed Linux machine. Use the tools to "
    "inspect the repository, find the bug, fix it with a minimal edit and run the tests. "
    "Call exactly one tool per message. When the tests pass, reply with a short summary "
    "and no tool call."
)


@dataclass
class LLMAgent:
    """Tool-calling agent over ``openai.AsyncOpenAI`` (base URL, key and model configurable)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    max_steps: int = 30
    temperature: float = 0.2
    max_tokens: int = 2048

    def client(self) -> Any:
        from openai import AsyncOpenAI

        return AsyncOpenAI(base_url=self.base_url, api_key=self.api_key or "EMPTY")

    async def run(self, env: SweEnv, *, seed: int, trajectory_id: str, options: dict | None = None) -> Trajectory:
        """Reset ``env`` with ``seed`` and let the model work until it stops or runs out of steps."""
        task, _ = await asyncio.to_thread(env.reset, seed=seed, options=options)
        ctx = env.context()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{task}\n\n{ctx.get('initial_state', '')}"},
        ]
        tools = [{"type": "function", "function": t} for t in TOOLS]
        turns: list[Turn] = []
        client = self.client()
        try:
            while len(turns) < self.max_steps:
                resp = await client.chat.completions.create(
                    model=self.model, messages=messages, tools=tools, temperature=self.temperature,
                    max_tokens=self.max_tokens,
                )
                msg = resp.choices[0].message
                calls = list(msg.tool_calls or [])
                messages.append(_assistant_message(msg.content, calls))
                if not calls:
                    text_call = text_tool_call(msg.content or "")
                    if text_call is None:
                        break
                    res = await asyncio.to_thread(env.step, text_call)
                    turns.append(Turn(action=text_call, observation=res.observation, started_at=time.time(),
                                      metadata={"tool_call": "text"}))
                    messages.append({"role": "user", "content": f"Tool output:\n{res.observation}"})
                    continue
                for call in calls:
                    action = _action_text(call.function.name, call.function.arguments)
                    t0 = time.time()
                    res = await asyncio.to_thread(env.step, action)
                    turns.append(Turn(action=action, observation=res.observation, started_at=t0,
                                      duration_s=time.time() - t0, metadata={"tool_call_id": call.id}))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": res.observation})
                    if len(turns) >= self.max_steps:
                        break
        finally:
            await client.close()
        return Trajectory(
            id=trajectory_id, domain="swe", turns=turns,
            provenance=Provenance(source="real", environment="swe-v1", agent=self.model, seed=seed),
            **ctx,
        )


_TEXT_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)


def text_tool_call(content: str) -> str | None:
    """A tool call written as text (``<tool_call>`` block or a bare JSON call), as action text."""
    found = _TEXT_CALL.search(content)
    candidates = [found.group(1)] if found else []
    start = content.find("{")
    if start >= 0:
        candidates.append(content[start:content.rfind("}") + 1])
    for text in candidates:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str) and isinstance(obj.get("arguments", {}), dict | str):
            args = obj.get("arguments", {})
            return _action_text(obj["name"], args if isinstance(args, str) else json.dumps(args))
    return None


def _action_text(name: str, arguments: str | None) -> str:
    """The recorded action: a canonical tool call, or the raw text when the model sent bad JSON."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return tool_call(name, **args) if isinstance(args, dict) else json.dumps({"name": name, "arguments": args})


def _assistant_message(content: str | None, calls: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in calls
        ]
    return out
