"""Many concurrent sessions of one environment (the simulator over one world model, or a
real environment), with limits that say no clearly.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel

from agentworld.envs.base import Env, EpisodeOver, Reset, Step
from agentworld.envs.record import RecordTurns
from agentworld.models import GenerationConfig, WorldModel
from agentworld.records.trajectory import Provenance, Trajectory
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
        # "code" is where OpenEnv's clients look for it (they raise "message (code: ...)").
        return {"error": self.code, "code": self.code, "message": self.message, **({"hint": self.hint} if self.hint else {})}


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


class EnvFailure(SessionError):
    """The environment itself failed (a sandbox that would not start, a dead process)."""

    status, code = 500, "env_error"


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
    env: Env | None
    """None while the environment starts (the session holds its slot meanwhile)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    touched: float = field(default_factory=time.monotonic)
    steps: int = 0
    seed: int | None = None


def action_text(action: Any) -> str:
    """Accept the action as text, ``{"text": ...}``, a tool-call object or a keystroke list."""
    if isinstance(action, str):
        return action
    if isinstance(action, dict) and set(action) == {"text"} and isinstance(action["text"], str):
        return action["text"]
    if isinstance(action, dict | list):
        return json.dumps(action, ensure_ascii=False)
    raise SessionError(f"an action must be text or JSON, got {type(action).__name__}")


class EnvSessions:
    """Open, step, inspect and close sessions of any :class:`~agentworld.envs.base.Env`,
    one ``factory(session_id)`` environment per session, under :class:`Limits`.

    A real environment's calls block (tmux, a sandbox, MCP servers): each runs in a worker
    thread, so one session's slow step never stalls the event loop serving the others.
    ``record``: a JSONL file that gets every session's trajectory when it ends (the
    factory's env is wrapped in :class:`~agentworld.envs.record.RecordTurns` for that).
    """

    def __init__(self, factory: Callable[[str], Env], *, env_id: str, limits: Limits | None = None,
                 record: str | Path | None = None):
        self.factory, self.env_id = factory, env_id
        self.record_path = Path(record) if record else None
        self.limits = limits or Limits()
        self.sessions: dict[str, _Session] = {}
        self.inflight = 0
        self.waiting = 0
        self.peak_sessions = 0
        self.refused = {"session_cap": 0, "busy": 0}
        self._slots: asyncio.Semaphore | None = None

    # -- what a kind of environment changes ----------------------------------------------
    async def _new_env(self, session_id: str) -> Env:
        env = await anyio.to_thread.run_sync(self.factory, session_id)
        return RecordTurns(env) if self.record_path is not None else env

    async def _reset_env(self, env: Env, seed: int | None, options: dict[str, Any]) -> Reset:
        return await anyio.to_thread.run_sync(lambda: env.reset(seed=seed, options=options or None))

    async def _step_env(self, env: Env, action: str) -> Step:
        return await anyio.to_thread.run_sync(env.step, action)

    def _state(self, sess: _Session) -> dict[str, Any]:
        return {"context": sess.env.context().model_dump(mode="json", exclude_none=True)}

    def _trajectory(self, sid: str, sess: _Session) -> Trajectory | None:
        env = sess.env
        if not isinstance(env, RecordTurns) or not env.turns:
            return None
        return env.trajectory(trajectory_id=f"{self.env_id}-{sid}-{time.time_ns()}",
                              provenance=Provenance(source="real", environment=self.env_id, seed=sess.seed))

    @property
    def domain(self) -> str:
        return ""

    @property
    def model_id(self) -> str | None:
        return None

    # -- sessions ------------------------------------------------------------------------
    def _slot(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limits.max_inflight)
        return self._slots

    async def _expire(self) -> None:
        now = time.monotonic()
        for sid in [s for s, sess in self.sessions.items() if now - sess.touched > self.limits.idle_timeout_s and not sess.lock.locked()]:
            await self.aclose(sid)

    async def reset(self, *, session_id: str | None = None, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[str, Reset]:
        """Reset the open session ``session_id``, or open a new one (``session_id`` None).

        Ids are made here, never chosen by clients: an unknown id is refused, so no client
        can plant a session under a name another will use."""
        await self._expire()
        sess = self.get(session_id) if session_id else None
        if sess is not None:
            if sess.lock.locked():
                raise SessionBusy(f"session {session_id!r} is stepping", "reset after the step's answer")
            sid = session_id
            self._save(sid, sess)  # a reset ends the episode: keep it before the history is cleared
        else:
            if len(self.sessions) >= self.limits.max_sessions:
                self.refused["session_cap"] += 1
                raise SessionCapReached(
                    f"session cap reached: {len(self.sessions)} of {self.limits.max_sessions} sessions are open",
                    "close finished sessions (POST /close or a WebSocket 'close' message) or raise --max-sessions",
                )
            sid = new_session_id()
            # The slot is taken before the (maybe slow) environment start, so the cap holds.
            sess = self.sessions[sid] = _Session(None)
            self.peak_sessions = max(self.peak_sessions, len(self.sessions))
            try:
                sess.env = await self._new_env(sid)
            except Exception as exc:
                self.sessions.pop(sid, None)
                raise EnvFailure(f"could not start {self.env_id}: {exc}", "retry, or check the environment's prerequisites") from exc
            except BaseException:
                self.sessions.pop(sid, None)
                raise
        sess.touched = time.monotonic()
        try:
            async with sess.lock:
                res = await self._first_observation(sess, seed, options)
        except SessionError:
            if session_id is None:  # nobody got this session's id: free its slot now
                await self.aclose(sid)
            raise
        sess.steps, sess.seed = 0, seed
        return sid, res

    async def _first_observation(self, sess: _Session, seed: int | None, options: dict[str, Any] | None) -> Reset:
        try:
            return await self._reset_env(sess.env, seed, dict(options or {}))
        except (ValueError, TypeError) as exc:
            raise SessionError(str(exc), "see GET /schema for the reset options") from None
        except SessionError:
            raise
        except Exception as exc:
            raise EnvFailure(f"{self.env_id} failed to reset: {exc}", "reset again, or close the session") from exc

    def get(self, session_id: str) -> _Session:
        sess = self.sessions.get(session_id)
        if sess is None or sess.env is None:  # (a session still starting is not open yet)
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
                if sess.env.episode_over:
                    raise SessionError("the episode is over", "call reset to start a new episode")
                try:
                    result = await self._step_env(sess.env, text)
                except EpisodeOver:
                    raise SessionError("the episode is over", "call reset to start a new episode") from None
                except ValueError as exc:  # the environment's own refusal of a malformed action
                    raise SessionError(f"bad action: {exc}", "see GET /schema for the action format") from None
                except SessionError:
                    raise
                except Exception as exc:
                    raise EnvFailure(f"{self.env_id} failed: {exc}", "reset the session, or close it") from exc
            finally:
                self.inflight -= 1
                self._slot().release()
            sess.touched = time.monotonic()
            sess.steps += 1
            return result

    def state(self, session_id: str) -> dict[str, Any]:
        sess = self.get(session_id)
        return {"episode_id": session_id, "session_id": session_id, "step_count": sess.steps,
                "done": sess.env.episode_over, **self._state(sess)}

    def close(self, session_id: str) -> bool:
        """Close a session now (its environment's ``close`` runs in this thread)."""
        sess = self._pop(session_id)
        if sess is not None:
            sess.env.close()
        return sess is not None

    async def aclose(self, session_id: str) -> bool:
        """Close a session, its environment's ``close`` in a worker thread (a sandbox
        teardown never stalls the event loop)."""
        sess = self._pop(session_id)
        if sess is not None:
            await anyio.to_thread.run_sync(sess.env.close)
        return sess is not None

    def _pop(self, session_id: str) -> _Session | None:
        sess = self.sessions.get(session_id)
        if sess is None or sess.env is None:
            return None
        del self.sessions[session_id]
        self._save(session_id, sess)
        return sess

    def close_all(self) -> int:
        """Close (and so record) every open session, e.g. on shutdown; returns how many."""
        sids = [sid for sid, sess in self.sessions.items() if sess.env is not None]
        for sid in sids:
            self.close(sid)
        return len(sids)

    def _save(self, sid: str, sess: _Session) -> None:
        if self.record_path is None:
            return
        traj = self._trajectory(sid, sess)
        if traj is not None:
            from agentworld.jsonl import JsonlAppender

            with JsonlAppender(self.record_path, fsync=False) as out:
                out.append(traj)

    def health(self) -> dict[str, Any]:
        return {
            "status": "healthy",
            "env": self.env_id,
            "sessions": len(self.sessions),
            "peak_sessions": self.peak_sessions,
            "inflight": self.inflight,
            "waiting": self.waiting,
            "refused": dict(self.refused),
            "limits": self.limits.model_dump(),
            "model": self.model_id,
        }


class SessionManager(EnvSessions):
    """Simulated sessions (:class:`SimEnv`) over one world model and a default scenario;
    each reset may bring its own scenario and perturbations."""

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
        super().__init__(self._sim_env, env_id="sim-v1", limits=limits, record=record)
        self.wm, self.scenario, self.perturbations = world_model, scenario, perturbations
        self.config, self.resample = config, resample

    def _sim_env(self, session_id: str) -> SimEnv:
        return SimEnv(self.wm, self.scenario, perturbations=self.perturbations, config=self.config,
                      resample=self.resample, session_id=session_id)

    async def _new_env(self, session_id: str) -> Env:
        return self._sim_env(session_id)  # cheap: no thread, and SimEnv records itself

    async def _reset_env(self, env: Env, seed: int | None, options: dict[str, Any]) -> Reset:
        return await env.areset(seed=seed, options=options)  # type: ignore[attr-defined]

    async def _step_env(self, env: Env, action: str) -> Step:
        return await env.astep(action)  # type: ignore[attr-defined]

    async def reset(  # type: ignore[override]
        self, *, session_id: str | None = None, seed: int | None = None,
        scenario: Scenario | dict | None = None, perturbations: PerturbationSpec | dict | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[str, Reset]:
        """:meth:`EnvSessions.reset` with the simulator's reset options as arguments."""
        try:
            opts: dict[str, Any] = dict(options or {})
            if scenario is not None:
                opts["scenario"] = Scenario.model_validate(scenario)
            if perturbations is not None:
                opts["perturbations"] = PerturbationSpec.model_validate(perturbations)
        except ValueError as exc:
            raise SessionError(str(exc)) from None
        return await super().reset(session_id=session_id, seed=seed, options=opts)

    def _state(self, sess: _Session) -> dict[str, Any]:
        st = sess.env.state  # type: ignore[attr-defined]
        return {"scenario": st.scenario.id, "ledger": st.ledger.model_dump(), "history": [t.model_dump() for t in st.turns]}

    def state(self, session_id: str) -> dict[str, Any]:
        out = super().state(session_id)
        out["step_count"] = len(out["history"])  # turns continued from a history option count too
        return out

    def close(self, session_id: str) -> bool:
        return self._pop(session_id) is not None  # a SimEnv holds nothing to release

    async def aclose(self, session_id: str) -> bool:
        return self.close(session_id)

    def _trajectory(self, sid: str, sess: _Session) -> Trajectory | None:
        env = sess.env
        if not env.turn:  # type: ignore[attr-defined]
            return None
        return env.record(trajectory_id=f"sim-{sid}-{time.time_ns()}")  # type: ignore[attr-defined]

    @property
    def domain(self) -> str:
        return self.scenario.domain

    @property
    def model_id(self) -> str | None:
        return self.wm.model_id
