"""An MCP server whose tools are simulated: any MCP client or agent runs against it unchanged.

Given tool schemas (a scenario, or the tools of a recorded trajectory), the facade lists
them over MCP and answers every ``tools/call`` with the world model's prediction of the
tool result, through a :class:`SimEnv` (ledger, perturbations and recording included).
Arguments are checked against the tool's ``inputSchema`` first (a violation is a tool
error, never a simulated call), and every predicted result against its ``outputSchema``
(official clients raise on a result that does not fit it): a result that fits, or whose
JSON text fits when it carries no fitting ``structuredContent``, goes out with that
structured content; any other becomes a tool error saying what did not fit, and is
recorded as the error the client saw. Each client gets its own simulated environment: one over
stdio, one per MCP session over streamable HTTP (stateless requests share one); calls to
one environment are applied one at a time, in arrival order. Long-lived sessions keep only their last ``history_turns`` turns
in the prompt (the ledger keeps what older turns established).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import mcp_types as types
from mcp.server.lowlevel.server import Server

from agentworld.domains.toolcall import result_payload
from agentworld.records.trajectory import Trajectory
from agentworld.serving import ServerPolicy
from agentworld.sim.env import SimEnv


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


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _compiled(schema: dict[str, Any]) -> Any:
    """A validator for a declared JSON Schema (raises ``jsonschema.SchemaError`` for a malformed one)."""
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _problems(validator: Any, instance: Any, root: str) -> list[str]:
    """The first few ways ``instance`` breaks ``validator``'s schema, each with where."""
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))[:3]
    return [f"{'/'.join(str(p) for p in e.absolute_path) or root}: {e.message[:200]}" for e in errors]


def _text_json(result: types.CallToolResult) -> dict[str, Any] | None:
    """The first text block that is a JSON object: where MCP servers put the serialized
    structured content too, and often all a world model predicts."""
    for block in result.content:
        if isinstance(block, types.TextContent):
            try:
                data = json.loads(block.text)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                return data
    return None


@dataclass
class _Client:
    env: SimEnv
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    started: bool = False
    touched: float = field(default_factory=time.monotonic)


def client_key(ctx: Any) -> str:
    """Which client environment a request belongs to: over streamable HTTP its MCP session
    id (handshake-era clients); stateless HTTP requests (protocol 2026-07-28 and later carry
    no session) share one environment, as they would share a real server's state; stdio
    and in-process transports serve exactly one client."""
    request = getattr(ctx, "request", None)
    if request is None or not hasattr(request, "headers"):
        return "local"
    sid = request.headers.get("mcp-session-id")
    return f"http:{sid}" if sid else "http:stateless"


class SimulatedToolServer:
    """Holds the simulated environments behind an MCP :class:`Server`.

    ``env`` is the template every client's environment is forked from. ``max_clients``
    caps the environments held (the least recently used is ended past it, like an idle
    one); every ended environment goes to ``on_finish`` (e.g. the ``--record`` file).
    ``history_turns`` bounds the turns each prompt carries.
    """

    def __init__(
        self, env: SimEnv, *, name: str = "agentworld-sim", seed: int = 0, max_clients: int = 256,
        history_turns: int | None = 50, on_finish: Callable[[Trajectory], None] | None = None,
    ):
        if not env.scenario.tools:
            raise ValueError("the scenario declares no tools: give tool schemas or a trajectory with tools")
        # An MCP server lives as long as its clients: no turn limit.
        env.state.scenario = env.scenario.model_copy(update={"max_turns": 10**9})
        env.history_turns = history_turns
        self.env = env
        self.tools = [mcp_tool(t) for t in env.scenario.tools]
        self.names = {t.name for t in self.tools}
        self.validators: dict[str, Any] = {}
        self.output_validators: dict[str, Any] = {}
        self.unchecked: list[str] = []
        for i, t in enumerate(self.tools):
            try:
                self.validators[t.name] = _compiled(t.input_schema)
            except jsonschema.SchemaError:
                self.unchecked.append(t.name)  # a malformed declared schema: calls go through unchecked
            if t.output_schema is not None:
                try:
                    self.output_validators[t.name] = _compiled(t.output_schema)
                except jsonschema.SchemaError:
                    # Clients compile an advertised outputSchema and fail every call on a
                    # malformed one: such a tool is listed without it.
                    self.tools[i] = t.model_copy(update={"output_schema": None})
        self.max_clients, self.on_finish = max_clients, on_finish
        self.clients: OrderedDict[str, _Client] = OrderedDict()
        self._seed = seed
        self.server = Server(
            name, version="1", instructions=env.scenario.task or None,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await self.call(params.name, dict(params.arguments or {}), client=client_key(ctx))

    def check_arguments(self, name: str, arguments: dict[str, Any]) -> str | None:
        """Why ``arguments`` do not fit the tool's declared inputSchema, or None when they do."""
        validator = self.validators.get(name)
        if validator is None:
            return None
        problems = _problems(validator, arguments, "(arguments)")
        return f"Invalid arguments for {name}: " + "; ".join(problems) if problems else None

    def check_result(self, name: str, result: types.CallToolResult) -> types.CallToolResult | str:
        """``result`` as a client may take it under the tool's outputSchema, or why it cannot be.

        Tool errors and tools without an outputSchema pass as they are (clients check only
        successful results). Otherwise the structured content that fits is the predicted
        ``structuredContent``, or else the JSON object of a text block."""
        validator = self.output_validators.get(name)
        if validator is None or result.is_error:
            return result
        structured, text = result.structured_content, _text_json(result)
        for candidate in (structured, text):
            if candidate is not None and not _problems(validator, candidate, ""):
                return result.model_copy(update={"structured_content": candidate})
        if structured is None and text is None:
            return f"The simulated {name} result has no structured content, which the tool's outputSchema requires"
        problems = _problems(validator, structured if structured is not None else text, "(structuredContent)")
        return f"The simulated {name} result does not fit the tool's outputSchema: " + "; ".join(problems)

    async def call(self, name: str, arguments: dict[str, Any], *, client: str = "default") -> types.CallToolResult:
        """Simulate one tool call (what ``tools/call`` runs) in ``client``'s environment."""
        if name not in self.names:
            return _error(f"Unknown tool: {name[:200]}")
        if (problem := self.check_arguments(name, arguments)) is not None:
            return _error(problem)
        sess = self._client(client)
        async with sess.lock:
            if not sess.started or sess.env.state.done:
                if sess.started:
                    self._finish(sess)
                await sess.env.areset(seed=self._seed)
                sess.started = True
            res = await sess.env.astep(json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False))
            sess.touched = time.monotonic()
            result = self.check_result(name, tool_result(res.observation, failed=res.info.get("error") is not None))
            if isinstance(result, str):
                # The client sees an error, so the session continues from (and records) that error.
                sess.env.rewrite_last(json.dumps({"content": [{"type": "text", "text": result}], "isError": True}))
                return _error(result)
        return result

    def _client(self, key: str) -> _Client:
        sess = self.clients.get(key)
        if sess is None:
            while len(self.clients) >= self.max_clients:
                _, old = self.clients.popitem(last=False)
                self._finish(old)
            sess = self.clients[key] = _Client(self.env.fork())
        self.clients.move_to_end(key)
        return sess

    def _finish(self, sess: _Client) -> None:
        if self.on_finish is not None and sess.env.turn:
            self.on_finish(sess.env.record(trajectory_id=f"sim-mcp-{sess.env.session_id}-{time.time_ns()}"))

    def records(self) -> list[Trajectory]:
        """The trajectories of the environments still held, one per client that called a tool."""
        return [c.env.record() for c in self.clients.values() if c.env.turn]

    def close_all(self) -> int:
        """End every held environment (``on_finish`` gets each); returns how many had turns."""
        held = [c for c in self.clients.values() if c.env.turn]
        for c in list(self.clients.values()):
            self._finish(c)
        self.clients.clear()
        return len(held)

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, *, host: str = "127.0.0.1", path: str = "/mcp", policy: ServerPolicy | None = None) -> Any:
        """A Starlette app serving streamable HTTP at ``path`` (run it with uvicorn).

        With ``policy`` the app sits behind :class:`agentworld.serving.RequestGuard`, which
        checks Host, Origin, token and size (one set of rules for every agentworld server:
        the SDK's own Host/Origin check is off, so ``--allow-host`` and ``--allow-origin``
        mean the same here). Without, the SDK's check stands (loopback hosts only for a
        loopback ``host``; none at all for a wildcard bind)."""
        if policy is None:
            return self.server.streamable_http_app(streamable_http_path=path, host=host)
        from mcp.server.transport_security import TransportSecuritySettings

        from agentworld.serving import guarded

        off = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        return guarded(self.server.streamable_http_app(streamable_http_path=path, host=host, transport_security=off), policy)
