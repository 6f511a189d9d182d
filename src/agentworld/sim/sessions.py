"""Many concurrent simulated sessions behind one world model, with limits that say no clearly.

The session table is capped (a new session past the cap is refused, never silently
evicting someone else's episode); steps run under an in-flight limit with a bounded
waiting line, so overload turns into an immediate "busy, retry" answer instead of an
unbounded queue; one step at a time per session; idle sessions expire.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentworld.envs.base import Reset, Step
from agentworld.models import GenerationConfig, WorldModel
from agentworld.sim.env import SimEnv
from agentworld.sim.perturb import PerturbationSpec
from agentworld.sim.scenario import Scenario


class SessionError(Exception):
    """A refused request: ``status`` is the HTTP status, ``code`` a stable machine name."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message, self.hint = message, hint

    def payload(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **({"hint": self.hint} if self.hint else {})}


class SessionCapReached(SessionError):
    status, code = 503, "session_cap"


class ServerBusy(SessionError):
    status, code = 429, "busy"


class UnknownSession(SessionError):
    status, code = 404, "unknown_session"


class SessionBusy(SessionError):
    status, code = 409, "session_busy"


class TooLarge(SessionError):
    status, code = 413, "too_large"


def new_session_id() -> str:
    """A server-made session id: 128 random bits, so holding one is the right to use it."""
    return secrets.token_urlsafe(16)


class Limits(BaseModel):
    max_sessions: int = 256
    """Open sessions at most; more are refused with 503."""
    max_inflight: int = 32
    """Steps simulated at once (the world model has its own concurrency limit too)."""
    max_waiting: int = 256
    """Steps allowed to wait for a slot; beyond that requests get 429 at once."""
    idle_timeout_s: float = 900.0
    """Sessions untouched this long are closed."""


@dataclass
class _Session:
    env: SimEnv
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    touched: float = field(default_factory=time.monotonic)


def action_text(action: Any) -> str:
    """Accept the action as text, ``{"text": ...}``, a tool-call object or a keystroke list."""
    if isinstance(action, str):
        return action
    if isinstance(action, dict) and set(action) == {"text"} and isinstance(action["text"], str):
        return action["text"]
    if isinstance(action, dict | list):
        return json.dumps(action, ensure_ascii=False)
    raise SessionError(f"an action must be text or JSON, got {type(action).__name__}")


class SessionManager:
    """Open, step, inspect and close :class:`SimEnv` sessions over one world model."""

    def __init__(
        self,
        world_model: WorldModel,
        scenario: Scenario,
        *,
        perturbations: PerturbationSpec | None = None,
        config: GenerationConfig | None = None,
        limits: Limits | None = None,
        resample: int = 0,
        record: str | Path | None = None,
    ):
        """``record``: a JSONL file that gets every session's trajectory when it closes."""
        self.wm, self.scenario, self.perturbations = world_model, scenario, perturbations
        self.record_path = Path(record) if record else None
        self.config, self.resample = config, resample
        self.limits = limits or Limits()
        self.sessions: dict[str, _Session] = {}
        self.inflight = 0
        self.waiting = 0
        self.peak_sessions = 0
        self.refused = {"session_cap": 0, "busy": 0}
        self._slots: asyncio.Semaphore | None = None

    def _slot(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_inflight)
        return self._slots

    def _expire(self) -> None:
        now = time.monotonic()
        for sid in [s for s, sess in self.sessions.items() if now - sess.touched > self.limits.idle_timeout_s and not sess.lock.locked()]:
            self.close(sid)

    async def reset(
        self, *, session_id: str | None = None, seed: int | None = None,
        scenario: Scenario | dict | None = None, perturbations: PerturbationSpec | dict | None = None,
    ) -> tuple[str, Reset]:
        """Reset the open session ``session_id``, or open a new one (``session_id`` None).

        Ids are made here, never chosen by clients: an unknown id is refused, so no client
        can plant a session under a name another will use."""
        self._expire()
        try:
            options: dict[str, Any] = {}
            if scenario is not None:
                options["scenario"] = Scenario.model_validate(scenario)
            if perturbations is not None:
                options["perturbations"] = PerturbationSpec.model_validate(perturbations)
        except ValueError as exc:
            raise SessionError(str(exc)) from None
        sess = self.get(session_id) if session_id else None
        if sess is not None:
            if sess.lock.locked():
                raise SessionBusy(f"session {session_id!r} is stepping", "reset after the step's answer")
            self._save(sess)  # a reset ends the episode: keep it before the history is cleared
        else:
            if len(self.sessions) >= self.limits.max_sessions:
                self.refused["session_cap"] += 1
                raise SessionCapReached(
                    f"session cap reached: {len(self.sessions)} of {self.limits.max_sessions} sessions are open",
                    "close finished sessions (POST /close or a WebSocket 'close' message) or raise --max-sessions",
                )
            sid = new_session_id()
            env = SimEnv(self.wm, self.scenario, perturbations=self.perturbations, config=self.config,
                         resample=self.resample, session_id=sid)
            sess = self.sessions[sid] = _Session(env)
            self.peak_sessions = max(self.peak_sessions, len(self.sessions))
        sess.touched = time.monotonic()
        try:
            return sess.env.session_id, await sess.env.areset(seed=seed, options=options)
        except ValueError as exc:
            raise SessionError(str(exc)) from None

    def get(self, session_id: str) -> _Session:
        sess = self.sessions.get(session_id)
        if sess is None:
            raise UnknownSession(f"no open session {session_id[:64]!r}", "open one with reset (no session_id: the server makes ids); idle sessions expire")
        return sess

    async def step(self, session_id: str, action: Any) -> Step:
        sess = self.get(session_id)
        if sess.lock.locked():
            raise SessionBusy(f"session {session_id!r} is already stepping", "wait for the previous step's answer")
        if self._slot().locked() and self.waiting >= self.limits.max_waiting:
            self.refused["busy"] += 1
            raise ServerBusy(f"server busy: {self.inflight} steps running, {self.waiting} waiting", "retry after a short pause")
        text = action_text(action)
        async with sess.lock:
            self.waiting += 1
            try:
                await self._slot().acquire()
            finally:
                self.waiting -= 1
            self.inflight += 1
            try:
                if sess.env.state.done:
                    raise SessionError("the episode is over", "call reset to start a new episode")
                result = await sess.env.astep(text)
            finally:
                self.inflight -= 1
                self._slot().release()
            sess.touched = time.monotonic()
            return result

    def state(self, session_id: str) -> dict[str, Any]:
        env = self.get(session_id).env
        st = env.state
        return {
            "episode_id": st.session_id,
            "session_id": st.session_id,
            "step_count": len(st.turns),
            "done": st.done,
            "scenario": st.scenario.id,
            "ledger": st.ledger.model_dump(),
            "history": [t.model_dump() for t in st.turns],
        }

    def close(self, session_id: str) -> bool:
        sess = self.sessions.pop(session_id, None)
        if sess is not None:
            self._save(sess)
        return sess is not None

    def close_all(self) -> int:
        """Close (and so record) every open session, e.g. on shutdown; returns how many."""
        sids = list(self.sessions)
        for sid in sids:
            self.close(sid)
        return len(sids)

    def _save(self, sess: _Session) -> None:
        if self.record_path is not None and sess.env.turn:
            from agentworld.jsonl import JsonlAppender

            with JsonlAppender(self.record_path, fsync=False) as out:
                out.append(sess.env.record(trajectory_id=f"sim-{sess.env.session_id}-{time.time_ns()}"))

    def health(self) -> dict[str, Any]:
        return {
            "status": "healthy",
            "sessions": len(self.sessions),
            "peak_sessions": self.peak_sessions,
            "inflight": self.inflight,
            "waiting": self.waiting,
            "refused": dict(self.refused),
            "limits": self.limits.model_dump(),
            "model": self.wm.model_id,
        }
