"""``--record`` keeps open sessions when the real server process gets SIGTERM or SIGINT:
``agentworld sim serve`` and ``agentworld sim mcp`` (streamable HTTP and stdio)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from test_sim_fixtures import READ_TOOLS, ks, terminal_trajectories

from agentworld.launch import free_port
from agentworld.records.trajectory import read_trajectories, write_trajectories

pytestmark = pytest.mark.slow


def _start(args: list[str], port: int, ready: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", *args, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}{ready}", timeout=1).status_code < 500:
                return proc
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "server not ready"
        time.sleep(0.2)


def _stop(proc: subprocess.Popen, sig: int) -> None:
    proc.send_signal(sig)
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sim_serve_records_open_sessions_on_signal(tmp_path: Path, sig: int) -> None:
    source = tmp_path / "terminal.jsonl"
    write_trajectories(source, terminal_trajectories())
    (tmp_path / "s.yaml").write_text("domain: terminal\nfirst_observation: 'root@sandbox:/workspace# '\n")
    record, port = tmp_path / "sessions.jsonl", free_port()
    proc = _start(["sim", "serve", "-b", "retrieval:" + str(source), "--scenario", str(tmp_path / "s.yaml"),
                   "--record", str(record)], port, "/health")
    try:
        url = f"http://127.0.0.1:{port}"
        sids = [httpx.post(f"{url}/reset", json={}).json()["session_id"] for _ in range(3)]
        for i, sid in enumerate(sids):
            for _ in range(i + 1):
                assert httpx.post(f"{url}/step", json={"session_id": sid, "action": ks("pwd\n")}).status_code == 200
    finally:
        _stop(proc, sig)
    trajs = read_trajectories(record, strict=True).items
    assert sorted(t.num_turns for t in trajs) == [1, 2, 3]
    assert all(any(t.id.startswith(f"sim-{sid}-") for t in trajs) for sid in sids)


def _tools(tmp_path: Path) -> tuple[Path, Path]:
    from test_sim_fixtures import mcp_trajectories

    source = tmp_path / "mcp.jsonl"
    write_trajectories(source, mcp_trajectories())
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": READ_TOOLS}))
    return source, tools


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_mcp_http_records_every_client_on_signal(tmp_path: Path, sig: int) -> None:
    from mcp import Client

    source, tools = _tools(tmp_path)
    record, port = tmp_path / "calls.jsonl", free_port()
    proc = _start(["sim", "mcp", "-b", "retrieval:" + str(source), "--tools", str(tools), "--transport", "http",
                   "--record", str(record)], port, "/mcp")

    async def two_clients() -> None:
        # Handshake-era clients carry MCP session ids: each gets its own environment.
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as a, Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as b:
            await a.call_tool("read_file", {"path": "/data/a.txt"})
            await b.call_tool("write_file", {"path": "/data/b.txt", "content": "beta"})
            await b.call_tool("list_items", {})

    try:
        asyncio.run(two_clients())
    finally:
        _stop(proc, sig)
    trajs = read_trajectories(record, strict=True).items
    assert sorted([json.loads(t.action)["name"] for t in tr.turns] for tr in trajs) == [["read_file"], ["write_file", "list_items"]]


def _rpc(proc: subprocess.Popen, msg: dict) -> dict | None:
    assert proc.stdin and proc.stdout
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    if "id" not in msg:
        return None
    return json.loads(proc.stdout.readline())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_mcp_stdio_records_on_signal(tmp_path: Path, sig: int) -> None:
    source, tools = _tools(tmp_path)
    record = tmp_path / "calls.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "agentworld", "sim", "mcp", "-b", "retrieval:" + str(source),
                             "--tools", str(tools), "--record", str(record)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        init = _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert init and "result" in init
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        res = _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/data/a.txt"}}})
        assert res and res["result"]["content"][0]["text"] == "alpha"
    finally:
        _stop(proc, sig)  # the client is still connected: only the signal ends the server
    [traj] = read_trajectories(record, strict=True).items
    assert [json.loads(t.action)["name"] for t in traj.turns] == ["read_file"]
