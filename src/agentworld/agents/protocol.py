"""How an agent talks to an environment: the prompt, the reply's action, the next message.

Two native protocols cover the task domains, both reusing the collection drivers' prompting
and parsing: keystrokes for the terminal (:mod:`agentworld.envs.terminal.drivers`) and
tool calls as ``<tool_call>`` text for MCP and search (:mod:`agentworld.envs.agent`, the
text protocol, so any backend -- a local ``hf``/``smol`` model included -- can play).

A third, ``tools``, is the protocol ``agent train`` teaches (TRL's environment hook): the
prompt of :func:`tool_prompt`, the episode's methods as the chat template's tools, tool
results as ``tool`` messages. Evaluating a trained policy with it measures the policy,
not a change of prompt; it needs a policy whose backend renders the chat template
(``hf``, with ``chat_template=qwen2.5`` where the model's own has no tool calls).
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from typing import Any

from agentworld.agents.tasks import AgentTask
from agentworld.envs.agent import action_text, system_prompt, text_calls, tool_response
from agentworld.envs.mcp.agent import INSTRUCTIONS as TOOL_INSTRUCTIONS
from agentworld.envs.terminal.drivers import agent_system_prompt, parse_agent_reply
from agentworld.envs.terminal.task import TerminalTask, cmd
from agentworld.models.base import Message
from agentworld.records.trajectory import SimContext


@dataclass(frozen=True)
class Reply:
    """What a model's reply means: an action to send, the agent saying it is done, or nothing usable."""

    action: str | None = None
    done: bool = False

    @property
    def invalid(self) -> bool:
        return self.action is None and not self.done


class Protocol(abc.ABC):
    @abc.abstractmethod
    def start(self, task: AgentTask, first_observation: str, context: SimContext) -> list[Message]:
        """The system prompt and the first user message."""

    @abc.abstractmethod
    def parse(self, text: str) -> Reply: ...

    @abc.abstractmethod
    def observation(self, observation: str) -> str:
        """The user message that carries an observation back."""

    invalid_hint: str = "That was not a valid action."
    role: str = "user"
    """The role of the message that carries an observation back."""


class TerminalProtocol(Protocol):
    invalid_hint = 'That was not a valid action. Reply with the JSON list only, e.g. [{"keystrokes": "ls\\n", "duration": 1}].'

    def start(self, task: AgentTask, first_observation: str, context: SimContext) -> list[Message]:
        prompt = agent_system_prompt(TerminalTask(name=task.family, description=task.instruction))
        return [{"role": "system", "content": prompt}, {"role": "user", "content": first_observation}]

    def parse(self, text: str) -> Reply:
        action = parse_agent_reply(text)
        if action is None:
            # A policy trained by `agent train` calls the terminal as a tool: terminal(command).
            calls = [a for n, a in text_calls(text) if n == "terminal" and isinstance(a, dict)]
            if calls and isinstance(calls[0].get("command"), str):
                return Reply(action=cmd(calls[0]["command"]))
        return Reply(done=True) if action == "" else Reply(action=action)

    def observation(self, observation: str) -> str:
        return observation


class ToolProtocol(Protocol):
    invalid_hint = 'Call a tool with <tool_call>{"name": ..., "arguments": {...}}</tool_call>, or reply without one when done.'

    def start(self, task: AgentTask, first_observation: str, context: SimContext) -> list[Message]:
        instructions = f"{TOOL_INSTRUCTIONS}\n\n{context.initial_state or ''}".strip()
        return [{"role": "system", "content": system_prompt(instructions, context.tools or [], native=False)},
                {"role": "user", "content": task.instruction}]

    def parse(self, text: str) -> Reply:
        calls = text_calls(text)
        if not calls:
            return Reply(done=True)  # an answer without a tool call ends the episode, as in collection
        name, args = calls[0]  # one call a turn: the next one may depend on this result
        if name == "call_tool" and isinstance(args, dict) and isinstance(args.get("name"), str):
            # a policy trained by `agent train` reaches every tool through call_tool(name, arguments)
            inner = args.get("arguments", {})
            name, args = args["name"], decode_or_keep(inner)
        return Reply(action=action_text(name, args))

    def observation(self, observation: str) -> str:
        return tool_response(observation)


def decode_or_keep(arguments: object) -> object:
    """Arguments given as a JSON string decoded, anything else as it is."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


TOOL_SYSTEM = ("You are an agent. Complete the task by calling the tools you are given, one at a time, reading each "
               "result. When the task is done, reply without a tool call.")
PROTOCOLS = ("native", "tools")


def tool_prompt(task: AgentTask) -> list[Message]:
    """The prompt ``agent train`` gives a task (before the reset text): the instructions, and
    for MCP and search the env's tools, reached through ``call_tool``."""
    tools = ""
    if task.domain != "terminal":
        tools = "\n\nTools you can call through call_tool:\n" + json.dumps(
            [{k: t.get(k) for k in ("name", "description", "inputSchema")} for t in task.scenario().tools or []],
            ensure_ascii=False)
    return [{"role": "system", "content": TOOL_SYSTEM + tools}, {"role": "user", "content": task.instruction}]


def reset_text(initial_state: str | None, first_observation: str) -> str:
    """What an episode's reset appends to the task's user message (TRL adds it there)."""
    return f"\n\n{initial_state or ''}\n\n{first_observation}".rstrip()


def tool_schemas(domain: str) -> list[dict[str, Any]]:
    """The JSON schemas of the training episode's tools, derived from its methods as TRL does."""
    from transformers.utils import get_json_schema

    from agentworld.agents.train import TerminalEpisode, ToolEpisode

    episode: Any = TerminalEpisode(None) if domain == "terminal" else ToolEpisode(None)  # type: ignore[arg-type]
    return [get_json_schema(episode.terminal if domain == "terminal" else episode.call_tool)]


class ToolCallProtocol(Protocol):
    """The protocol of ``agent train``: its prompt, its tools in the chat template, ``tool`` results."""

    invalid_hint = 'Call a tool with <tool_call>{"name": ..., "arguments": {...}}</tool_call>, or reply without one when done.'

    def __init__(self, domain: str):
        self.domain = domain
        self._native = TerminalProtocol() if domain == "terminal" else ToolProtocol()

    def start(self, task: AgentTask, first_observation: str, context: SimContext) -> list[Message]:
        system, user = tool_prompt(task)
        # The backend hands "tools" to the chat template (HFBackend.prompt_text), as TRL does.
        system_msg: Any = {**system, "tools": tool_schemas(self.domain)}
        return [system_msg, {**user, "content": user["content"] + reset_text(context.initial_state, first_observation)}]

    def parse(self, text: str) -> Reply:
        if not text_calls(text):
            return Reply(done=True)  # a reply without a tool call ends the episode, as in training
        if self.domain == "terminal":
            reply = self._native.parse(text)
            return reply if reply.action is not None else Reply()
        return self._native.parse(text)

    def observation(self, observation: str) -> str:
        return observation

    role = "tool"


def protocol_for(domain: str, protocol: str = "native") -> Protocol:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})")
    if protocol == "tools":
        return ToolCallProtocol(domain)
    return TerminalProtocol() if domain == "terminal" else ToolProtocol()
