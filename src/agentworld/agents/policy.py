"""Policies: what chooses the agent's next message from the conversation so far.

A :class:`ModelPolicy` is any backend the shared spec names (``openai:MODEL@URL``,
``hf:PATH``, ``smol,packaged=false``...) used as a chat model: its raw completion is the
agent's reply, read by the domain's protocol. Two scripted policies need no model:
``scripted`` plays the task's own solution (the ceiling) and ``idle`` stops at once (the
floor); both write their replies in the protocol's own format.
"""

from __future__ import annotations

import abc
import json
import re
from typing import Any

from agentworld.agents.tasks import AgentTask
from agentworld.models.base import Backend, GenerationConfig, Message

SCRIPTED = ("scripted", "idle")
_TOOL_ACTION = re.compile(r"^\s*\{")


class Policy(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    async def reply(self, messages: list[Message], *, task: AgentTask, turn: int) -> str:
        """The agent's next message; ``turn`` counts the actions sent so far."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release the model."""


class ModelPolicy(Policy):
    def __init__(self, backend: Backend, config: GenerationConfig | None = None, *, name: str | None = None):
        self.backend = backend
        self.config = GenerationConfig(temperature=0.0, max_tokens=256).merged(config).resolved()
        self.name = name or backend.model_id

    async def reply(self, messages: list[Message], *, task: AgentTask, turn: int) -> str:
        # The seed varies with the task and turn, so sampled rollouts differ across
        # episodes while a rerun of the same episode asks for the same samples.
        cfg = self.config if self.config.seed is None else self.config.merged(
            GenerationConfig(seed=(self.config.seed * 1_000_003 + task.seed * 101 + turn) % 2**31))
        [out, *_] = await self.backend.complete(messages, cfg.merged(GenerationConfig(n=1)), domain=None)
        return out.text

    async def aclose(self) -> None:
        await self.backend.aclose()


class ScriptedPolicy(Policy):
    """``scripted``: the task's solution, then done; ``idle``: done at once."""

    def __init__(self, kind: str = "scripted"):
        if kind not in SCRIPTED:
            raise ValueError(f"unknown scripted policy {kind!r} (known: {', '.join(SCRIPTED)})")
        self.name = kind

    async def reply(self, messages: list[Message], *, task: AgentTask, turn: int) -> str:
        if self.name == "idle" or turn >= len(task.solution):
            return '{"done": true}' if task.domain == "terminal" else "Done."
        action = task.solution[turn]
        return f"<tool_call>{action}</tool_call>" if _TOOL_ACTION.match(action) and task.domain != "terminal" else action


def load_policy(spec: str, opts: list[str] | None = None, *, config: GenerationConfig | None = None,
                backend_options: dict[str, Any] | None = None) -> Policy:
    """``scripted``, ``idle``, or a backend spec (the shared grammar) for a model policy."""
    if spec in SCRIPTED:
        return ScriptedPolicy(spec)
    from agentworld.models import load_backend, parse_backend_spec

    parsed = parse_backend_spec(spec, opts)
    return ModelPolicy(load_backend(parsed, **(backend_options or {})), config, name=str(parsed))


def describe(policy: Policy) -> dict[str, Any]:
    """The settings a rollout line records (a resume with other settings is refused)."""
    out: dict[str, Any] = {"policy": policy.name}
    if isinstance(policy, ModelPolicy):
        out["model_id"] = policy.backend.model_id
        out["generation"] = policy.config.to_dict()
    return json.loads(json.dumps(out))
