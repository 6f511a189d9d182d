"""The real terminal environment (``terminal-v1``): a sandboxed shell in tmux."""

from agentworld.domains.terminal.keys import ActionError, Batch, action_json, parse_action
from agentworld.envs.terminal.env import TerminalConfig, TerminalEnv
from agentworld.envs.terminal.task import TerminalTask
from agentworld.envs.terminal.tasks import TEMPLATES

__all__ = ["TEMPLATES", "ActionError", "Batch", "TerminalConfig", "TerminalEnv", "TerminalTask", "action_json",
           "parse_action"]
