"""The LLM-agent loop for environments whose actions are text the model writes (terminal
keystrokes, desktop programs, browser actions, device gestures), shared by their drivers.

Each driver supplies a :class:`TextProtocol`: the system prompt, how to read an action out of
a reply, the replies that end the episode, and the reminder a reply without an action gets.
The loop asks the model, records each action through the driver's recorder (a
:class:`~agentworld.envs.record.RecordTurns`, or one that drops turns), and stops when the
model says it is finished, gives ``max_invalid`` unusable replies in a row, the env ends the
episode, or after ``max_turns`` actions. Tool-calling environments use
:func:`agentworld.envs.agent.run_agent` instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld.envs.agent import AgentConfig, open_client
from agentworld.envs.base import Reset, Step


class Recorder(Protocol):
    def reset(self, **kwargs: Any) -> Reset: ...

    def step(self, action: str) -> Step: ...


@dataclass(frozen=True)
class TextProtocol:
    system: str
    """The system prompt (task and action format)."""
    parse: Callable[[str], str | None]
    """A reply -> the action text, a key of ``finish``, or None when it holds no usable action."""
    reminder: str
    """What a reply without an action is answered with."""
    finish: Mapping[str, str] = field(default_factory=dict)
    """Parsed replies that end the episode -> how it finished (e.g. ``{"DONE": "done"}``)."""
    opening: Callable[[str], str] | None = None
    """The first user message from the first observation (default: the observation)."""


async def play_text_agent(recorder: Recorder, protocol: TextProtocol, config: AgentConfig, *,
                          reset: dict[str, Any], client: Any = None,
                          before_turn: Callable[[], None] | None = None) -> str:
    """Play one episode; returns how it finished: a ``finish`` value, ``invalid_actions``,
    ``terminated`` (the env ended it) or ``max_steps``. ``reset`` are the recorder's
    ``reset`` arguments (seed, options). ``before_turn`` runs before each model call (e.g. a
    time budget that raises). The client is closed unless one was given."""
    own = client is None
    client = client or open_client(config)
    try:
        first = await asyncio.to_thread(recorder.reset, **reset)
        opening = protocol.opening(first.observation) if protocol.opening else first.observation
        messages = [{"role": "system", "content": protocol.system}, {"role": "user", "content": opening}]
        invalid = steps = 0
        while steps < config.max_turns:
            if before_turn is not None:
                before_turn()
            reply = await client.chat.completions.create(
                model=config.model, messages=messages, temperature=config.temperature, max_tokens=config.max_tokens)
            text = reply.choices[0].message.content or ""
            messages.append({"role": "assistant", "content": text})
            action = protocol.parse(text)
            if action is not None and action in protocol.finish:
                return protocol.finish[action]
            if action is None:
                invalid += 1
                if invalid >= config.max_invalid:
                    return "invalid_actions"
                messages.append({"role": "user", "content": protocol.reminder})
                continue
            invalid = 0
            steps += 1
            res = await asyncio.to_thread(recorder.step, action)
            messages.append({"role": "user", "content": res.observation})
            if res.terminated or res.truncated:
                return "terminated"
        return "max_steps"
    finally:
        if own:
            await client.close()
