"""A synchronous handle on a set of running MCP servers, through the official ``mcp`` SDK.

Environments step synchronously, the SDK is async: :class:`McpHub` owns one event loop
in a background thread. A single long-lived task opens every stdio connection and keeps
it open (the SDK's transports must be entered and left in the same task); tool calls run
as their own tasks on that loop. Results are recorded exactly as the client receives
them: the ``CallToolResult`` as JSON (``content``, ``structuredContent``, ``isError``),
or the JSON-RPC error object when the server rejects the request itself (unknown tool).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from agentworld.envs.mcp.servers import Limits, ServerSpec, confined_argv, hand_over, server_env
from agentworld.envs.sandbox.limits import Cgroup


class McpStartError(RuntimeError):
    """A server did not start or did not complete the MCP handshake."""


@dataclass
class ToolRef:
    server: str
    schema: dict[str, Any]


def result_json(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as the JSON a client sees, in wire key order.

    ``resultType`` is protocol bookkeeping of newer revisions, not part of the tool
    result, so it is left out.
    """
    data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    out: dict[str, Any] = {"content": data.get("content", [])}
    if "structuredContent" in data:
        out["structuredContent"] = data["structuredContent"]
    out["isError"] = bool(data.get("isError", False))
    if "_meta" in data:
        out["_meta"] = data["_meta"]
    return out


def error_json(exc: MCPError) -> dict[str, Any]:
    err: dict[str, Any] = {"code": exc.error.code, "message": exc.error.message}
    if exc.error.data is not None:
        err["data"] = exc.error.data
    return {"error": err}


class McpHub:
    """Start ``specs`` confined over ``workspace``; list and call their tools synchronously.

    ``workspace`` is handed to the servers' unprivileged user on start (see :func:`hand_over`).
    The servers run in ``cgroup`` (the episode's, see :mod:`.episode_folder`); without one
    the hub makes its own with ``limits`` and removes it on :meth:`close`.
    """

    def __init__(self, specs: list[ServerSpec], workspace: Path, *, limits: Limits = Limits(),
                 timeout_s: float = 60.0, log_path: Path | None = None, cgroup: Cgroup | None = None):
        self.specs = specs
        self.cgroup = cgroup
        self._own_cgroup = False
        self.workspace = workspace
        self.limits = limits
        self.timeout_s = timeout_s
        self.log_path = log_path or workspace.parent / f"{workspace.name}.servers.log"
        self.tools: dict[str, ToolRef] = {}
        self.server_info: dict[str, dict[str, Any]] = {}
        self._sessions: dict[str, ClientSession] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="mcp-hub")
        self._stop: asyncio.Event | None = None
        self._lifetime: Future[None] | None = None

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> McpHub:
        hand_over(self.workspace)
        if self.cgroup is None:
            self.cgroup = Cgroup.create(self.limits.cgroup_limits())
            self._own_cgroup = self.cgroup is not None
        self._thread.start()
        ready: Future[None] = Future()
        self._lifetime = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            ready.result(timeout=self.timeout_s)
        except BaseException as exc:
            self.close()
            if isinstance(exc, McpStartError):
                raise
            raise McpStartError(f"MCP servers did not start: {exc!r} (server log: {self.log_path})") from exc
        return self

    async def _hold(self, ready: Future[None]) -> None:
        self._stop = asyncio.Event()
        try:
            with self.log_path.open("a", encoding="utf-8") as errlog:
                async with contextlib.AsyncExitStack() as stack:
                    for spec in self.specs:
                        dirs = tuple(self.cgroup.dirs) if self.cgroup is not None else ()
                        argv = confined_argv(spec, self.workspace, self.limits, dirs)
                        params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(spec))
                        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                        session = await stack.enter_async_context(ClientSession(read, write))
                        init = await session.initialize()
                        self._sessions[spec.name] = session
                        info = init.server_info.model_dump(mode="json", exclude_none=True)
                        self.server_info[spec.name] = info
                        listed = await session.list_tools()
                        for tool in listed.tools:
                            schema = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
                            # First server wins a name clash; catalogs avoid clashes.
                            self.tools.setdefault(tool.name, ToolRef(spec.name, schema))
                    ready.set_result(None)
                    await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(McpStartError(f"MCP server failed to start: {exc!r} (log: {self.log_path})"))
            elif not isinstance(exc, asyncio.CancelledError):
                raise

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._stop is not None and self._lifetime is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            with contextlib.suppress(BaseException):
                self._lifetime.result(timeout=15)
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._loop.is_running():
            self._loop.close()
        if self._own_cgroup and self.cgroup is not None:
            self.cgroup.remove()  # kills whatever a server left running
            self._own_cgroup = False

    def __enter__(self) -> McpHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls -------------------------------------------------------------------
    def tool_schemas(self) -> list[dict[str, Any]]:
        return [ref.schema for ref in self.tools.values()]

    def call(self, name: str, arguments: dict[str, Any] | None, *, server: str | None = None) -> dict[str, Any]:
        """Call a tool and return what the client receives (result or JSON-RPC error).

        Unknown tools go to ``server`` (default: the first server), whose own error the
        client would see.
        """
        ref = self.tools.get(name)
        target = ref.server if ref else (server or self.specs[0].name)
        fut = asyncio.run_coroutine_threadsafe(self._call(target, name, arguments), self._loop)
        return fut.result(timeout=self.timeout_s + 5)

    async def _call(self, server: str, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        session = self._sessions[server]
        try:
            result = await asyncio.wait_for(session.call_tool(name, arguments), self.timeout_s)
        except MCPError as exc:
            return error_json(exc)
        except TimeoutError:
            return {"error": {"code": -32001, "message": f"Request timed out after {self.timeout_s:g}s"}}
        return result_json(result)
