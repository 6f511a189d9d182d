"""MCP: the agent calls tools declared by MCP servers; the observation is the tool result."""

from agentworld.domains._spec import DomainSpec
from agentworld.domains.toolcall import effects  # what a call did: see agentworld.domains.toolcall

SPEC = DomainSpec(
    name="mcp",
    title="MCP tools",
    environment="a set of Model Context Protocol (MCP) servers exposing the tools listed below",
    action_space=(
        "Each action is one JSON tool call: "
        '{"name": "<tool name>", "arguments": {...}}. Only the tools declared in the tool '
        "schemas exist; arguments follow each tool's input schema."
    ),
    observation_format=(
        "Answer with the tool result exactly as an MCP client receives it, as JSON: "
        '{"content": [{"type": "text", "text": "..."}], "isError": false} plus '
        '"structuredContent" when the tool declares an output schema. Calls to unknown tools '
        "or with arguments that break the schema fail as the server would fail them "
        '("isError": true with the server\'s error text).'
    ),
    tools_define_actions=True,
    judge_guidance=(
        "The observation is an MCP tool result. Check that it is JSON shaped like the "
        "real result (content items, isError, structuredContent), that success versus "
        "error matches, and that values written earlier in the session (created ids, "
        "stored entities, file contents) come back unchanged."
    ),
)

__all__ = ["SPEC", "effects"]
