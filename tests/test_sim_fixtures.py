"""Shared builders for the simulator tests: real retrieval sources, worlds, servers.

The retrieval backend (BM25 over recorded turns) is the fast, deterministic local world
model the simulator tests run against; its index is built from the trajectories below.
"""

from __future__ import annotations

import json
import threading
import time

from agentworld.launch import free_port
from agentworld.records.trajectory import Trajectory, Turn
from agentworld.serving import ServerPolicy, uvicorn_config

P = "root@sandbox:/workspace#"
READ_TOOLS = [
    {"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Write a file", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}},
    {"name": "list_items", "description": "List items", "inputSchema": {"type": "object", "properties": {}}},
]


def ks(text: str) -> str:
    return json.dumps([{"keystrokes": text, "duration": 1.0}])


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def result(text: str, is_error: bool = False) -> str:
    return json.dumps({"content": [{"type": "text", "text": text}], "isError": is_error})


def screen(cmd: str, output: str = "", cwd: str = "/workspace") -> str:
    prompt = f"root@sandbox:{cwd}#"
    return f"{P} {cmd}\n{output + chr(10) if output else ''}{prompt}"


def terminal_trajectories() -> list[Trajectory]:
    return [
        Trajectory(id="t-notes", domain="terminal", task_description="Keep notes", turns=[
            Turn(action=ks("echo hello > notes.txt\n"), observation=screen("echo hello > notes.txt")),
            Turn(action=ks("cat notes.txt\n"), observation=screen("cat notes.txt", "hello")),
            Turn(action=ks("ls\n"), observation=screen("ls", "notes.txt")),
            Turn(action=ks("rm notes.txt\n"), observation=screen("rm notes.txt")),
        ]),
        Trajectory(id="t-other", domain="terminal", task_description="Inspect files", turns=[
            Turn(action=ks("cat notes.txt\n"), observation=screen("cat notes.txt", "cat: notes.txt: No such file or directory")),
            Turn(action=ks("pwd\n"), observation=screen("pwd", "/workspace")),
            Turn(action=ks("uname -a\n"), observation=screen("uname -a", "Linux sandbox 6.1.0 #1 SMP x86_64 GNU/Linux")),
        ]),
    ]


def mcp_trajectories() -> list[Trajectory]:
    items = json.dumps([{"id": i, "name": f"item-{i}"} for i in range(8)])
    return [Trajectory(id="m1", domain="mcp", tools=READ_TOOLS, task_description="Read files", turns=[
        Turn(action=call("read_file", path="/data/a.txt"), observation=result("alpha")),
        Turn(action=call("write_file", path="/data/b.txt", content="beta"), observation=result("Successfully wrote to /data/b.txt")),
        Turn(action=call("list_items"), observation=result(items)),
    ])]


class ServerThread:
    """A real uvicorn server on a free port in a background thread."""

    def __init__(self, app: object, policy: ServerPolicy | None = None):
        import uvicorn

        self.port = free_port()
        # The configuration the CLI serves with (WebSocket message cap, bounded shutdown).
        self.server = uvicorn.Server(uvicorn_config(app, host="127.0.0.1", port=self.port, policy=policy or ServerPolicy()))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
