"""``mcp-v1``: real MCP servers over stdio, one sandboxed workspace per episode.

An action is one JSON tool call ``{"name": ..., "arguments": {...}}``; the observation is
the JSON the MCP client received (the tool result, or the JSON-RPC error when the server
refused the request). The trajectory's ``tools`` are the servers' ``tools/list`` schemas.
"""

from __future__ import annotations

import json
import tempfile
import weakref
from pathlib import Path
from typing import Any

from agentworld import tool_calls
from agentworld.envs._owner import write_owner
from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.clock import Clock
from agentworld.envs.mcp.client import McpHub
from agentworld.envs.mcp.episode_folder import EpisodeFolder
from agentworld.envs.mcp.servers import Limits, server_spec
from agentworld.envs.mcp.versions import unversioned
from agentworld.envs.mcp.workspace import build_workspace, describe_workspace
from agentworld.envs.sweep import MCP_PREFIX, sweep_leftovers
from agentworld.records.trajectory import SimContext
from agentworld.tool_calls import ToolCallError


def parse_tool_call(action: str) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` from an action, or the reason it is not a tool call."""
    try:
        return tool_calls.parse_tool_call(action)
    except ToolCallError as exc:
        return _CALL_ERRORS[exc.kind].format(exc=exc)


# Observation wording per parse failure, as recorded in shipped trajectories.
_CALL_ERRORS = {
    "not_json": "Parse error: action is not JSON ({exc.msg} at column {exc.colno})",
    "not_a_call": 'Invalid request: expected {{"name": <tool name>, "arguments": {{...}}}}',
    "arguments_not_json": "Invalid params: arguments is not a JSON object",
    "arguments_not_object": "Invalid params: arguments must be a JSON object",
}


WHOSE_CLOCK = "The servers'"
"""How the initial state names the clock it declares."""


def dump_observation(data: dict[str, Any]) -> str:
    # Version-free, so the ground truth does not depend on the servers' pydantic.
    return unversioned(json.dumps(data, ensure_ascii=False))


class McpEnv(Env):
    """Real MCP servers for one episode at a time.

    ``reset(options=...)`` takes ``servers`` (names from :data:`SERVER_NAMES`), ``task``
    (the task description), the workspace content (see :mod:`.workspace`) and ``clock``:
    when the servers' wall clock starts (ISO 8601 with a zone; default
    :data:`~agentworld.envs.clock.DEFAULT_START`, or ``"real"`` for a task that needs the
    host's clock). The initial state declares it. Each episode lives in a temporary
    folder under ``root`` (default: the system's), removed when the next episode starts,
    on :meth:`close`, when the env is garbage-collected or the interpreter exits, and --
    after a kill -- by the next environment start's sweep.
    """

    domain = "mcp"
    deterministic_reset = True

    def __init__(self, *, servers: list[str] | None = None, root: str | Path | None = None,
                 limits: Limits = Limits(), timeout_s: float = 30.0):
        self.default_servers = servers or ["filesystem"]
        self.root = Path(root) if root else None
        self.limits = limits
        self.timeout_s = timeout_s
        self._hub: McpHub | None = None
        self._tmp: Path | None = None
        self._remove_tmp: weakref.finalize | None = None
        self._folder: EpisodeFolder | None = None
        self._context: dict[str, Any] = {}

    @property
    def hub(self) -> McpHub:
        if self._hub is None:
            raise RuntimeError("call reset() before step()")
        return self._hub

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self._teardown()
        options = dict(options or {})
        names = list(options.get("servers") or self.default_servers)
        if self.root:
            self.root.mkdir(parents=True, exist_ok=True)
            sweep_leftovers(self.root)  # the default folder is swept when any env starts
        clock = Clock.of(options.get("clock"))
        specs = [server_spec(n, clock) for n in names]  # an unknown name fails before anything is made
        self._tmp = Path(tempfile.mkdtemp(prefix=MCP_PREFIX, dir=self.root))
        write_owner(self._tmp)
        folder = EpisodeFolder.create(self._tmp, self.limits)
        self._remove_tmp = weakref.finalize(self, folder.remove)
        self._folder = folder
        try:
            build_workspace(folder.workspace, options, limits=self.limits, cgroup=folder.cgroup_dirs)
            self._hub = McpHub(specs, folder.workspace, limits=self.limits, timeout_s=self.timeout_s,
                               log_path=self._tmp / "servers.log", cgroup=folder.cgroup).start()
        except BaseException:
            self._teardown()  # a refused or failed reset leaves no folder, mount or cgroup
            raise
        workspace = folder.workspace
        state = describe_workspace(options)
        servers = "; ".join(f"{n} ({server_spec(n).description}, {self._hub.server_info[n].get('name')} "
                            f"{self._hub.server_info[n].get('version')})" for n in names)
        self._context = {
            "task_description": options.get("task", ""),
            "tools": self._hub.tool_schemas(),
            "initial_state": f"MCP servers: {servers}.\n{state}\n{clock.describe(WHOSE_CLOCK)}",
        }
        info = {"servers": names, "tools": sorted(self._hub.tools), "workspace": str(workspace)}
        return Reset(observation=self._context["initial_state"], info=info)

    def step(self, action: str) -> Step:
        info = self._step(action)
        if self._folder is not None and self._folder.disk_full():
            info = info._replace(info={**info.info, "disk_full": True})
        return info

    def _step(self, action: str) -> Step:
        parsed = parse_tool_call(action)
        if isinstance(parsed, str):
            code = -32700 if parsed.startswith("Parse error") else -32602
            data: dict[str, Any] = {"error": {"code": code, "message": parsed}}
            return Step(dump_observation(data), 0.0, False, False, {"is_error": True})
        name, args = parsed
        data = self.hub.call(name, args)
        ref = self.hub.tools.get(name)
        info = {"server": ref.server if ref else None, "is_error": bool(data.get("isError") or "error" in data)}
        return Step(dump_observation(data), 0.0, False, False, info)

    def context(self) -> SimContext:
        return SimContext.of(self._context)

    def _teardown(self) -> None:
        if self._hub is not None:
            self._hub.close()
            self._hub = None
        if self._remove_tmp is not None:
            self._remove_tmp()  # removes the folder once, whoever calls first
            self._remove_tmp = None
            self._tmp = None
            self._folder = None

    def close(self) -> None:
        self._teardown()
