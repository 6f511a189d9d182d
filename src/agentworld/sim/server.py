"""The simulator over HTTP and WebSocket, following the OpenEnv conventions.

HTTP: ``POST /reset`` opens (or resets) a session and returns its ``session_id``;
``POST /step`` with ``{"session_id", "action"}``; ``GET /state?session_id=``;
``POST /close``; ``GET /health``; ``GET /schema``. Results look like OpenEnv's:
``{"observation": {"text", "metadata"}, "reward", "done", "truncated"}``.

WebSocket ``/ws``: one connection is one session; messages are
``{"type": "reset"|"step"|"state"|"close", "data": {...}}`` and answers
``{"type": "observation"|"state"|"closed"|"error", "data": {...}}``.
Refusals (session cap, busy, unknown session) carry a stable ``error`` code, a message
and a hint.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from agentworld.envs.base import Reset, Step
from agentworld.sim.sessions import SessionError, SessionManager


class ResetRequest(BaseModel):
    session_id: str | None = None
    episode_id: str | None = None
    """OpenEnv's name for the session id; either works."""
    seed: int | None = None
    scenario: dict[str, Any] | None = None
    perturbations: dict[str, Any] | None = None


class StepRequest(BaseModel):
    session_id: str
    action: Any


class SessionRequest(BaseModel):
    session_id: str


def reset_payload(session_id: str, res: Reset) -> dict[str, Any]:
    return {"session_id": session_id, "observation": {"text": res.observation, "metadata": res.info},
            "reward": None, "done": False, "truncated": False}


def step_payload(res: Step) -> dict[str, Any]:
    return {"observation": {"text": res.observation, "metadata": res.info}, "reward": res.reward,
            "done": res.terminated or res.truncated, "terminated": res.terminated, "truncated": res.truncated}


def create_app(manager: SessionManager) -> FastAPI:
    app = FastAPI(title="AgentWorld simulator", summary="A world model served as an environment")
    app.state.manager = manager

    @app.exception_handler(SessionError)
    async def _refused(_: Request, exc: SessionError) -> JSONResponse:
        headers = {"Retry-After": "1"} if exc.status in (429, 503) else None
        return JSONResponse(exc.payload(), status_code=exc.status, headers=headers)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return manager.health()

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        sc = manager.scenario
        return {
            "domain": sc.domain,
            "action": {"type": "string", "description": "the action text (JSON for tool calls and keystrokes)"},
            "observation": {"type": "object", "properties": {"text": {"type": "string"}, "metadata": {"type": "object"}}},
            "tools": sc.tools or [],
            "scenario": sc.model_dump(exclude={"hidden_summary"}),
        }

    @app.post("/reset")
    async def reset(req: ResetRequest | None = None) -> dict[str, Any]:
        req = req or ResetRequest()
        sid, res = await manager.reset(session_id=req.session_id or req.episode_id, seed=req.seed,
                                       scenario=req.scenario, perturbations=req.perturbations)
        return reset_payload(sid, res)

    @app.post("/step")
    async def step(req: StepRequest) -> JSONResponse:
        # Plain JSON out: the payload is already JSON-safe, so skip FastAPI's slow encoder.
        return JSONResponse(step_payload(await manager.step(req.session_id, req.action)))

    @app.get("/state")
    async def state(session_id: str) -> dict[str, Any]:
        return manager.state(session_id)

    @app.post("/close")
    async def close(req: SessionRequest) -> dict[str, Any]:
        return {"session_id": req.session_id, "closed": manager.close(req.session_id)}

    @app.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        sid: str | None = None
        try:
            while True:
                msg = await socket.receive_json()
                kind, data = msg.get("type"), msg.get("data") or {}
                try:
                    if kind == "reset":
                        req = ResetRequest.model_validate(data)
                        sid, res = await manager.reset(session_id=sid, seed=req.seed, scenario=req.scenario,
                                                       perturbations=req.perturbations)
                        await socket.send_json({"type": "observation", "data": reset_payload(sid, res)})
                    elif sid is None:
                        raise SessionError("send a reset message first", '{"type": "reset", "data": {}}')
                    elif kind == "step":
                        res = await manager.step(sid, data.get("action"))
                        await socket.send_json({"type": "observation", "data": step_payload(res)})
                    elif kind == "state":
                        await socket.send_json({"type": "state", "data": manager.state(sid)})
                    elif kind == "close":
                        manager.close(sid)
                        await socket.send_json({"type": "closed", "data": {"session_id": sid}})
                        sid = None
                        await socket.close()
                        return
                    else:
                        raise SessionError(f"unknown message type {kind!r}", "use reset, step, state or close")
                except SessionError as exc:
                    await socket.send_json({"type": "error", "data": exc.payload()})
                except ValueError as exc:  # a malformed message (pydantic validation)
                    await socket.send_json({"type": "error", "data": SessionError(str(exc)).payload()})
        except WebSocketDisconnect:
            pass
        finally:
            # A dropped connection frees its session slot.
            if sid is not None:
                manager.close(sid)

    return app
