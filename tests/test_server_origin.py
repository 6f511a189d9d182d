"""Web pages and rebinding names try to drive real servers over loopback; every try is refused.

A page the operator opens in a browser can send WebSocket handshakes and "simple" POSTs to
any loopback port (its Origin header says where it comes from), and a hostile name that
resolves to 127.0.0.1 (DNS rebinding) makes the browser send that name as Host. The
servers refuse both with 403 before any session exists, and refuse to bind beyond loopback
without a token. Each test's name says what it tries.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_sim_fixtures import READ_TOOLS, ServerThread

from agentworld.launch import free_port, launched
from agentworld.serving import PolicyError, ServerPolicy

EVIL = "http://evil.example"
UI = "http://ui.local:8080"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    from agentworld.sim.inputs import build_world_files

    path = tmp_path_factory.mktemp("world") / "world.sqlite"
    build_world_files(path, seed=1, questions=2)
    return path


def _env_serve(world: Path, *extra: str) -> Iterator[str]:
    args = ("env", "serve", "fictional-search", "--env-kwargs", json.dumps({"world": str(world)}), *extra)
    with launched(*args, timeout=120) as url:
        yield url


@pytest.fixture(scope="module")
def env_server(world: Path) -> Iterator[str]:
    """``agentworld env serve`` with its defaults: loopback, no token, no extra host or origin."""
    yield from _env_serve(world)


@pytest.fixture(scope="module")
def env_server_allowing(world: Path) -> Iterator[str]:
    yield from _env_serve(world, "--allow-origin", UI, "--allow-host", "proxy.example")


def _sessions(url: str) -> int:
    return httpx.get(url + "/health").json()["sessions"]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def _ws_status(url: str, *, origin: str | None = None, host: str | None = None) -> int:
    """The HTTP status a WebSocket handshake to ``url``/ws gets (101 when accepted; a reset
    is sent and answered then). ``host`` is the name the client thinks it reaches (the
    connection still goes to the server's loopback port), as a rebinding page's would."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    port = _port(url)
    sock = socket.create_connection(("127.0.0.1", port))
    kw = {"origin": origin} if origin is not None else {}
    try:
        async with connect(f"ws://{host or '127.0.0.1'}:{port}/ws", sock=sock, **kw) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            assert json.loads(await ws.recv())["type"] == "observation"
            return 101
    except InvalidStatus as exc:
        body = json.loads(exc.response.body)
        assert body["error"] in ("forbidden_origin", "forbidden_host") and body["hint"]
        return exc.response.status_code


async def test_foreign_origin_websocket_handshake_to_env_serve_is_refused(env_server: str) -> None:
    assert await _ws_status(env_server, origin=EVIL) == 403
    assert await _ws_status(env_server, origin="null") == 403  # a sandboxed iframe or a file:// page
    # Another loopback port is another origin (any local dev server's page).
    assert await _ws_status(env_server, origin="http://127.0.0.1:3000") == 403
    assert _sessions(env_server) == 0


async def test_foreign_origin_simple_post_reset_is_refused_and_opens_no_session(env_server: str) -> None:
    # What a page's fetch(..., {mode: "no-cors", body: "{}"}) sends: text/plain, no preflight.
    for body in ("{}", '{"seed": 0}'):
        r = httpx.post(env_server + "/reset", content=body, headers={"Origin": EVIL, "Content-Type": "text/plain"})
        assert r.status_code == 403
        assert r.json()["error"] == "forbidden_origin" and "--allow-origin" in r.json()["hint"]
    r = httpx.post(env_server + "/reset", json={}, headers={"Origin": EVIL})
    assert r.status_code == 403
    assert _sessions(env_server) == 0


async def test_dns_rebinding_host_is_refused_even_for_health(env_server: str) -> None:
    port = _port(env_server)
    rebound = {"Host": f"evil.example:{port}"}
    for method, path in (("GET", "/health"), ("POST", "/reset"), ("GET", "/schema")):
        r = httpx.request(method, env_server + path, headers=rebound, json={} if method == "POST" else None)
        assert r.status_code == 403 and r.json()["error"] == "forbidden_host", path
    # The page's own origin is the rebound name: same-origin in the browser's eyes, not here.
    r = httpx.post(env_server + "/reset", json={}, headers={**rebound, "Origin": f"http://evil.example:{port}"})
    assert r.status_code == 403 and r.json()["error"] == "forbidden_host"
    assert await _ws_status(env_server, host="evil.example") == 403
    assert await _ws_status(env_server, host="evil.example", origin=f"http://evil.example:{port}") == 403
    # A name that only looks local is no loopback name either.
    assert httpx.get(env_server + "/health", headers={"Host": f"localhost.evil.example:{port}"}).status_code == 403
    assert _sessions(env_server) == 0


async def test_no_origin_and_same_origin_requests_are_served(env_server: str) -> None:
    port = _port(env_server)
    for headers in ({}, {"Origin": f"http://127.0.0.1:{port}"}, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"},
                    {"Host": "localhost"}, {"Host": f"[::1]:{port}"}):
        r = httpx.post(env_server + "/reset", json={"seed": 0}, headers=headers)
        assert r.status_code == 200, (headers, r.text)
        sid = r.json()["session_id"]
        assert httpx.post(env_server + "/close", json={"session_id": sid}, headers=headers).json()["closed"] is True
    assert await _ws_status(env_server) == 101  # no Origin: a Python client
    assert await _ws_status(env_server, origin=f"http://127.0.0.1:{port}") == 101
    assert await _ws_status(env_server, host="localhost", origin=f"http://localhost:{port}") == 101


async def test_allow_origin_admits_that_origin_and_no_other(env_server_allowing: str) -> None:
    url = env_server_allowing
    r = httpx.post(url + "/reset", json={}, headers={"Origin": UI})
    assert r.status_code == 200
    httpx.post(url + "/close", json={"session_id": r.json()["session_id"]})
    assert await _ws_status(url, origin=UI) == 101
    for other in ("http://ui.local:8081", "https://ui.local:8080", "http://ui.local", EVIL):
        assert httpx.post(url + "/reset", json={}, headers={"Origin": other}).status_code == 403, other
        assert await _ws_status(url, origin=other) == 403
    assert _sessions(url) == 0


async def test_allow_host_admits_a_proxy_name_and_still_refuses_rebinding(env_server_allowing: str) -> None:
    url = env_server_allowing
    assert httpx.get(url + "/health", headers={"Host": "proxy.example"}).status_code == 200
    assert httpx.get(url + "/health", headers={"Host": "proxy.example:443"}).status_code == 200
    assert httpx.get(url + "/health", headers={"Host": "evil.example"}).status_code == 403
    assert await _ws_status(url, host="proxy.example") == 101


@pytest.mark.parametrize("command", [
    ("env", "serve", "fictional-search"),
    ("serve", "--backend", "retrieval:/nonexistent.jsonl"),
    ("sim", "serve", "--backend", "retrieval:/nonexistent.jsonl"),
    ("sim", "mcp", "--transport", "http", "--backend", "retrieval:/nonexistent.jsonl"),
])
@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_public_bind_without_a_token_exits_before_binding(command: tuple[str, ...], host: str, monkeypatch) -> None:
    monkeypatch.delenv("AGENTWORLD_TOKEN", raising=False)
    port = free_port()
    proc = subprocess.run([sys.executable, "-m", "agentworld", *command, "--host", host, "--port", str(port)],
                          capture_output=True, text=True, timeout=120)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 2, said
    assert "without a token" in said and "--token" in said and "AGENTWORLD_TOKEN" in said
    assert "Traceback" not in said


def test_a_wildcard_origin_or_host_is_refused_not_taken_silently() -> None:
    with pytest.raises(PolicyError, match="not an http"):
        ServerPolicy(allowed_origins=frozenset({"*"}))
    with pytest.raises(PolicyError, match="not a host name"):
        ServerPolicy(allowed_hosts=frozenset({"*"}))
    with pytest.raises(PolicyError, match="without a token"):
        ServerPolicy.for_bind("0.0.0.0")
    policy = ServerPolicy.for_bind("0.0.0.0", token="t")
    # A wildcard bind admits loopback names and this machine's own addresses, no other name.
    assert policy.host_ok("127.0.0.1") and policy.host_ok("localhost") and not policy.host_ok("evil.example")
    assert policy.host_ok(socket.gethostbyname(socket.gethostname()))
    assert not policy.host_ok("203.0.113.77")  # TEST-NET-3: nobody's address, certainly not this machine's


def test_cli_refuses_a_wildcard_allow_origin(world: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "agentworld", "env", "serve", "fictional-search", "--env-kwargs",
                           json.dumps({"world": str(world)}), "--allow-origin", "*", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "'*' is not supported" in proc.stdout + proc.stderr


async def test_foreign_origin_and_rebinding_host_cannot_call_simulated_mcp_tools(mcp_wm) -> None:
    from agentworld.sim import Scenario, SimEnv
    from agentworld.sim.mcp_facade import SimulatedToolServer

    facade = SimulatedToolServer(SimEnv(mcp_wm, Scenario(domain="mcp", tools=READ_TOOLS)))
    policy = ServerPolicy.for_bind("127.0.0.1", allow_hosts=["mcp.proxy.example"])
    with ServerThread(facade.http_app(policy=policy), policy) as srv:
        call = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        r = httpx.post(f"{srv.url}/mcp", json=call, headers={**accept, "Origin": EVIL})
        assert r.status_code == 403 and r.json()["error"] == "forbidden_origin"
        r = httpx.post(f"{srv.url}/mcp", json=call, headers={**accept, "Host": f"evil.example:{srv.port}"})
        assert r.status_code == 403 and r.json()["error"] == "forbidden_host"
        # Admitted: no Origin, and a proxy name given with --allow-host (the SDK's own check is off).
        assert httpx.post(f"{srv.url}/mcp", json=call, headers=accept).status_code == 200
        assert httpx.post(f"{srv.url}/mcp", json=call, headers={**accept, "Host": "mcp.proxy.example"}).status_code == 200
    assert facade.records() == []


def test_slow_clients_are_cut_off_and_never_stall_others(monkeypatch) -> None:
    """Slowloris: connections that send a header line now and then (before any Host or
    token check can see a request) are closed at the head deadline, and a normal client
    is answered at once meanwhile."""
    import socket
    import time

    from fastapi import FastAPI

    from agentworld import serving
    from agentworld.serving import ServerPolicy

    monkeypatch.setattr(serving, "HEADER_TIMEOUT_S", 1.5)
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    with ServerThread(app, ServerPolicy()) as srv:
        slow = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(s)
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        t0 = time.monotonic()
        assert httpx.get(srv.url + "/health", timeout=5).json() == {"status": "ok"}
        assert time.monotonic() - t0 < 1.0
        closed = 0
        deadline = time.monotonic() + 8
        for s in [*slow, idle]:
            while time.monotonic() < deadline:
                try:
                    s.sendall(b"X-Drip: 1\r\n")  # one more header line, as a slow client would
                    s.settimeout(0.5)
                    if s.recv(1) == b"":
                        closed += 1
                        break
                except TimeoutError:
                    continue
                except OSError:  # reset by the server
                    closed += 1
                    break
            s.close()
        assert closed == 21 and time.monotonic() - t0 < 8
        # a whole request still gets its answer, and the connection may stay for the next
        with httpx.Client() as client:
            assert client.get(srv.url + "/health").status_code == 200
            time.sleep(0.2)
            assert client.get(srv.url + "/health").status_code == 200
