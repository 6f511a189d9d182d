"""How an agent talks to an environment: the prompt, the reply's action, the next message.

Two protocols cover the task domains, both reusing the collection drivers' prompting
and parsing: keystrokes for the terminal (:mod:`agentworld.envs.terminal.drivers`) and
tool calls as ``<tool_call>`` text for MCP and search (:mod:`agentworld.envs.agent`, the
text protocol, so any backend -- a local ``hf``/``smol`` model included -- can play).
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass

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


def protocol_for(domain: str) -> Protocol:
    return TerminalProtocol() if domain == "terminal" else ToolProtocol()
