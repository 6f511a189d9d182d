"""The simulator server over real HTTP and WebSocket connections."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from test_sim_fixtures import ServerThread, ks, screen, terminal_wm  # noqa: F401 (fixture)

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

    from agentworld.trajectory import read_trajectories

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
