"""The simulator server over real HTTP and WebSocket connections."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from test_sim_fixtures import ServerThread, ks, screen

from agentworld.serving import ServerPolicy
from agentworld.sim import Scenario
from agentworld.sim.server import create_app
from agentworld.sim.sessions import Limits, ServerBusy, SessionManager

PROMPT = "root@sandbox:/workspace# "


def _manager(wm, **limits) -> SessionManager:
    return SessionManager(wm, Scenario(domain="terminal", first_observation=PROMPT), limits=Limits(**limits))


async def test_64_concurrent_sessions(terminal_wm):
    manager = _manager(terminal_wm, max_sessions=64, max_inflight=16)
    with ServerThread(create_app(manager)) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            resets = await asyncio.gather(*(client.post("/reset", json={"seed": i}) for i in range(64)))
            assert all(r.status_code == 200 for r in resets)
            sids = [r.json()["session_id"] for r in resets]
            assert len(set(sids)) == 64 and resets[0].json()["observation"]["text"] == PROMPT

            async def episode(i: int, sid: str) -> list[dict]:
                out = []
                for cmd in (f"echo {i} > mine.txt\n", "pwd\n", "cat mine.txt\n"):
                    r = await client.post("/step", json={"session_id": sid, "action": ks(cmd)})
                    assert r.status_code == 200, r.text
                    out.append(r.json())
                return out

            results = await asyncio.gather(*(episode(i, sid) for i, sid in enumerate(sids)))
            assert all(r[1]["observation"]["text"] == screen("pwd", "/workspace") for r in results)
            # Each session's ledger holds its own write, so the shared answer "hello" conflicts everywhere.
            assert all(r[2]["observation"]["metadata"]["ledger_conflicts"][0]["expected"] == f"{i}\n" for i, r in enumerate(results))
            states = await asyncio.gather(*(client.get("/state", params={"session_id": s}) for s in sids))
            assert {s.json()["step_count"] for s in states} == {3}
            health = (await client.get("/health")).json()
            assert health["sessions"] == 64 and health["peak_sessions"] == 64 and health["refused"] == {"session_cap": 0, "busy": 0}
            # The 65th session is refused with a clear error; closing one makes room.
            over = await client.post("/reset", json={})
            assert over.status_code == 503 and over.json()["error"] == "session_cap" and "max-sessions" in over.json()["hint"]
            assert (await client.post("/close", json={"session_id": sids[0]})).json()["closed"] is True
            assert (await client.post("/reset", json={})).status_code == 200


async def test_errors_are_clear(terminal_wm):
    with ServerThread(create_app(_manager(terminal_wm))) as srv:
        async with httpx.AsyncClient(base_url=srv.url) as client:
            r = await client.post("/step", json={"session_id": "nope", "action": "ls"})
            assert r.status_code == 404 and r.json()["error"] == "unknown_session"
            r = await client.post("/reset", json={"scenario": {"domain": "nowhere"}})
            assert r.status_code == 400 and "unknown domain" in r.json()["message"]
            schema = (await client.get("/schema")).json()
            assert schema["domain"] == "terminal" and "hidden_summary" not in schema["scenario"]


async def test_backpressure_refuses_when_slots_and_queue_are_full(terminal_wm):
    manager = _manager(terminal_wm, max_inflight=1, max_waiting=0)
    sid, _ = await manager.reset()
    slot = manager._slot()
    await slot.acquire()  # a long step holds the only slot
    with pytest.raises(ServerBusy, match="busy"):
        await manager.step(sid, ks("ls\n"))
    slot.release()
    assert (await manager.step(sid, ks("pwd\n"))).observation == screen("pwd", "/workspace")
    assert manager.refused["busy"] == 1


async def test_websocket_session(terminal_wm, tmp_path):
    from websockets.asyncio.client import connect

    from agentworld.records.trajectory import read_trajectories

    manager = _manager(terminal_wm)
    manager.record_path = tmp_path / "sessions.jsonl"
    with ServerThread(create_app(manager)) as srv:
        async with connect(srv.url.replace("http", "ws") + "/ws") as ws:
            await ws.send(json.dumps({"type": "step", "data": {"action": "ls"}}))
            assert json.loads(await ws.recv())["type"] == "error"
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            reset = json.loads(await ws.recv())
            assert reset["type"] == "observation" and reset["data"]["observation"]["text"] == PROMPT
            await ws.send(json.dumps({"type": "step", "data": {"action": [{"keystrokes": "pwd\n", "duration": 1}]}}))
            step = json.loads(await ws.recv())
            assert step["data"]["observation"]["text"] == screen("pwd", "/workspace") and step["data"]["done"] is False
            await ws.send(json.dumps({"type": "state", "data": {}}))
            assert json.loads(await ws.recv())["data"]["step_count"] == 1
            assert len(manager.sessions) == 1
            await ws.send(json.dumps({"type": "close", "data": {}}))
            assert json.loads(await ws.recv())["type"] == "closed"
        assert manager.sessions == {}
    [traj] = read_trajectories(tmp_path / "sessions.jsonl", strict=True).items
    assert traj.provenance.source == "sim" and traj.num_turns == 1 and '"pwd\\n"' in traj.turns[0].action


async def test_idle_sessions_expire_and_resets_keep_the_session(terminal_wm):
    manager = _manager(terminal_wm, idle_timeout_s=3600)
    sid, _ = await manager.reset(seed=1)
    await manager.step(sid, ks("pwd\n"))
    again, res = await manager.reset(session_id=sid, seed=2)
    assert again == sid and manager.state(sid)["step_count"] == 0 and res.observation == PROMPT
    manager.limits.idle_timeout_s = 0.0
    await manager.reset()  # any new request sweeps sessions idle for longer than the limit
    assert sid not in manager.sessions and len(manager.sessions) == 1


# -- hardening: sizes, malformed input, ids, tokens ---------------------------------------

LIMIT = 1 << 20


async def _chunked_post(url: str, path: str, head: bytes, chunks, between) -> tuple[int, bytes]:
    """POST ``head`` + ``chunks`` with chunked encoding (no Content-Length: the server must
    count streamed bytes); ``between`` runs after the first chunk, while the request is in
    flight. Returns the status and body the server answered with."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                 f"Transfer-Encoding: chunked\r\n\r\n".encode())
    sent = 0
    try:
        for i, chunk in enumerate([head, *chunks]):
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            sent += len(chunk)
            if i == 1:
                await between()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    except (ConnectionResetError, BrokenPipeError):
        pass  # the server answered and hung up before the whole body was sent, as it should
    raw = await reader.read()
    writer.close()
    status_line, _, rest = raw.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


async def test_a_10mb_action_gets_413_while_other_sessions_keep_stepping(terminal_wm):
    manager = _manager(terminal_wm)
    with ServerThread(create_app(manager)) as srv:
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            big_sid = (await client.post("/reset", json={})).json()["session_id"]
            other = (await client.post("/reset", json={})).json()["session_id"]
            # Content-Length over the limit: refused from the headers, body never read.
            r = await client.post("/step", json={"session_id": big_sid, "action": "a" * (10 << 20)})
            assert r.status_code == 413 and r.json()["error"] == "too_large" and "max-request-bytes" in r.json()["hint"]
            steps: list[float] = []

            async def other_session_steps() -> None:
                for cmd in ("pwd\n", "echo 1 > a.txt\n", "cat a.txt\n"):
                    t0 = time.perf_counter()
                    r = await client.post("/step", json={"session_id": other, "action": ks(cmd)})
                    steps.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text

            # Streamed without a length: the other session's steps all complete while the
            # big body is in flight (half a MiB sent, the server still reading), then the
            # big request is cut off at the limit.
            head = json.dumps({"session_id": big_sid, "action": ""})[:-2].encode()
            chunks = [b"a" * (256 << 10)] * 40
            status, body = await _chunked_post(srv.url, "/step", head, chunks, other_session_steps)
            assert status == 413 and json.loads(body)["error"] == "too_large"
            assert len(steps) == 3
            print(f"other session's steps while a 10 MB request streamed in: max {max(steps) * 1000:.1f} ms")
            # Nothing was simulated for the big session; the server still answers it.
            assert manager.state(big_sid)["step_count"] == 0
            assert (await client.post("/step", json={"session_id": big_sid, "action": ks("pwd\n")})).status_code == 200


async def test_malformed_websocket_frames_get_error_frames_and_the_connection_stays(terminal_wm):
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    with ServerThread(create_app(_manager(terminal_wm))) as srv:
        async with connect(srv.url.replace("http", "ws") + "/ws", max_size=None) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(await ws.recv())["type"] == "observation"
            bad = {
                "not JSON": "{nope",
                "a list": json.dumps([1, 2]),
                "a string": json.dumps("step"),
                "bad data": json.dumps({"type": "step", "data": "ls"}),
                "unknown type": json.dumps({"type": "jump", "data": {}}),
                "no action": json.dumps({"type": "step", "data": {"act": "ls"}}),
                "bad regex": json.dumps({"type": "reset", "data": {"scenario": {"domain": "terminal", "success_patterns": ["(unclosed"]}}}),
                "binary": b"\x00\xff\xfe",
                "too large": json.dumps({"type": "step", "data": {"action": "a" * LIMIT}}),
            }
            for what, frame in bad.items():
                await ws.send(frame)
                answer = json.loads(await ws.recv())
                assert answer["type"] == "error" and answer["data"]["message"], what
                if what == "bad regex":
                    assert "not a valid regular expression" in answer["data"]["message"]
                if what == "too large":
                    assert answer["data"]["error"] == "too_large"
            # The same connection still steps.
            await ws.send(json.dumps({"type": "step", "data": {"action": ks("pwd\n")}}))
            step = json.loads(await ws.recv())
            assert step["type"] == "observation" and step["data"]["observation"]["text"] == screen("pwd", "/workspace")
        # Past the protocol cap the message is never read whole: the connection closes (1009).
        async with connect(srv.url.replace("http", "ws") + "/ws", max_size=None) as ws:
            await ws.send("x" * (ServerPolicy().ws_max_size + 1))
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_bad_regexes_and_options_are_400_and_ids_are_the_servers(terminal_wm):
    with ServerThread(create_app(_manager(terminal_wm))) as srv:
        async with httpx.AsyncClient(base_url=srv.url) as client:
            r = await client.post("/reset", json={"scenario": {"domain": "terminal", "success_patterns": ["[a-"]}})
            assert r.status_code == 400 and "not a valid regular expression" in r.json()["message"]
            r = await client.post("/reset", json={"seed": 1, "sed": 2})
            assert r.status_code == 400 and "sed" in r.json()["message"]
            r = await client.post("/reset", json={"perturbations": {"rules": [{"kind": "explode"}]}})
            assert r.status_code == 400 and "perturbations.rules.0.kind" in r.json()["message"]
            r = await client.post("/step", json={"session_id": "x", "action": 3})
            assert r.status_code == 400 and "action" in r.json()["message"]
            # Clients cannot choose session ids: an unknown one is refused, never created.
            r = await client.post("/reset", json={"session_id": "mine"})
            assert r.status_code == 404 and r.json()["error"] == "unknown_session"
            sid = (await client.post("/reset", json={})).json()["session_id"]
            assert len(sid) >= 20 and sid != (await client.post("/reset", json={})).json()["session_id"]
            # Its own id resets the session (the id is the capability).
            assert (await client.post("/reset", json={"session_id": sid, "seed": 3})).json()["session_id"] == sid


async def test_the_token_guards_every_endpoint_but_health(terminal_wm):
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    policy = ServerPolicy(token="s3cret")
    with ServerThread(create_app(_manager(terminal_wm), policy), policy) as srv:
        auth = {"Authorization": "Bearer s3cret"}
        async with httpx.AsyncClient(base_url=srv.url) as client:
            assert (await client.get("/health")).status_code == 200
            for method, path in (("POST", "/reset"), ("GET", "/schema"), ("GET", "/state?session_id=x"), ("POST", "/step")):
                r = await client.request(method, path, json={})
                assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), path
                wrong = await client.request(method, path, json={}, headers={"Authorization": "Bearer s3cre"})
                assert wrong.status_code == 401
            r = await client.post("/reset", json={}, headers=auth)
            assert r.status_code == 200
        url = srv.url.replace("http", "ws") + "/ws"
        with pytest.raises(InvalidStatus):
            async with connect(url):
                pass
        async with connect(url, additional_headers=auth) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(await ws.recv())["type"] == "observation"


async def test_a_catastrophic_success_pattern_does_not_hang_a_step(terminal_wm):
    manager = _manager(terminal_wm)
    sid, _ = await manager.reset(scenario={"domain": "terminal", "first_observation": PROMPT,
                                           "success_patterns": [r"^(\w+\s?)*$"]})
    res = await manager.step(sid, ks("pwd\n"))  # the observation ends in '#': no match, after the time limit
    assert res.terminated is False and res.observation == screen("pwd", "/workspace")
