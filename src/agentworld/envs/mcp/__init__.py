"""Real MCP servers as an environment (``mcp-v1``): sandboxed stdio servers, seeded tasks,
scripted and LLM-agent policies."""

from agentworld.envs.mcp.client import McpHub, McpStartError
from agentworld.envs.mcp.env import McpEnv, parse_tool_call
from agentworld.envs.mcp.episode import ToolTask, action_text, run_scripted
from agentworld.envs.mcp.servers import SERVER_NAMES, missing_servers, server_spec
from agentworld.envs.mcp.tasks import TEMPLATES, make_task

__all__ = ["SERVER_NAMES", "TEMPLATES", "McpEnv", "McpHub", "McpStartError", "ToolTask", "action_text",
           "make_task", "missing_servers", "parse_tool_call", "run_scripted", "server_spec"]
