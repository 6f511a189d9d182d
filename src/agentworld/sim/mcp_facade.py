"""An MCP server whose tools are simulated: any MCP client or agent runs against it unchanged.

Given tool schemas (a scenario, or the tools of a recorded trajectory), the facade lists
them over MCP and answers every ``tools/call`` with the world model's prediction of the
tool result, through a :class:`SimEnv` (ledger, perturbations and recording included).
Like a real MCP server it has one environment state shared by all clients; calls are
applied one at a time, in arrival order. Served over stdio or streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server

from agentworld.sim.env import SimEnv
from agentworld.sim.ledger.tools import result_payload


def mcp_tool(schema: dict[str, Any]) -> types.Tool:
    """An MCP Tool from a declared schema (MCP style, ``input_schema`` or OpenAI function style)."""
    if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
        schema = schema["function"]
    params = schema.get("inputSchema") or schema.get("input_schema") or schema.get("parameters") or {"type": "object", "properties": {}}
    output = schema.get("outputSchema") or schema.get("output_schema")
    return types.Tool(name=schema["name"], description=schema.get("description"), input_schema=params, output_schema=output)


def tool_result(observation: str, *, failed: bool = False) -> types.CallToolResult:
    """A CallToolResult from a simulated observation (an MCP result JSON or plain text)."""
    try:
        data = json.loads(observation)
    except (json.JSONDecodeError, TypeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("content"), list):
        blocks = [
            types.TextContent(type="text", text=b["text"] if isinstance(b, dict) and isinstance(b.get("text"), str) else json.dumps(b))
            for b in data["content"]
        ]
        structured = data.get("structuredContent")
        return types.CallToolResult(
            content=blocks or [types.TextContent(type="text", text="")],
            is_error=bool(data.get("isError")) or failed,
            structured_content=structured if isinstance(structured, dict) else None,
        )
    _, is_error = result_payload(observation)
    return types.CallToolResult(content=[types.TextContent(type="text", text=observation)], is_error=is_error or failed)


class SimulatedToolServer:
    """Holds the simulated environment behind an MCP :class:`Server`."""

    def __init__(self, env: SimEnv, *, name: str = "agentworld-sim", seed: int = 0):
        if not env.scenario.tools:
            raise ValueError("the scenario declares no tools: give tool schemas or a trajectory with tools")
        # An MCP server lives as long as its clients: no turn limit.
        env.state.scenario = env.scenario.model_copy(update={"max_turns": 10**9})
        self.env = env
        self.tools = [mcp_tool(t) for t in env.scenario.tools]
        self.names = {t.name for t in self.tools}
        self._lock = asyncio.Lock()
        self._started = False
        self._seed = seed
        self.server = Server(
            name, version="1", instructions=env.scenario.task or None,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in self.names:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"Unknown tool: {params.name}")], is_error=True)
        return await self.call(params.name, dict(params.arguments or {}))

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Simulate one tool call (what ``tools/call`` runs)."""
        async with self._lock:
            if not self._started or self.env.state.done:
                await self.env.areset(seed=self._seed)
                self._started = True
            res = await self.env.astep(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False))
        return tool_result(res.observation, failed=res.info.get("error") is not None)

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp") -> Any:
        """A Starlette app serving streamable HTTP at ``path`` (run it with uvicorn)."""
        return self.server.streamable_http_app(streamable_http_path=path, host=host)
