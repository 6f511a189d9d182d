"""One episode: a policy plays a task in the real environment or the simulator, then is graded.

The same task runs unchanged in both modes. ``real`` builds the task's registered
environment (``terminal-v1``, ``mcp-v1``, ``fictional-search-v1``) and records it with the
shared recorder; ``sim`` builds ``sim-v1`` over a world model with the task's scenario
(and its checks, and a ledger seeded with the starting files where the task knows them).
The episode ends when the agent says it is done, sends a final action (search:
``submit_answer``), gives ``max_invalid`` unusable replies in a row, the environment ends
it, or ``max_turns`` actions were sent. The grade is taken before the environment closes.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentworld.agents.policy import Policy
from agentworld.agents.protocol import protocol_for
from agentworld.agents.tasks import AgentTask, JudgeFn
from agentworld.envs.base import Env, make
from agentworld.envs.record import RecordTurns
from agentworld.models import WorldModel
from agentworld.records.trajectory import Provenance, SimContext, Trajectory

Mode = Literal["real", "sim"]
MODES: tuple[str, ...] = ("real", "sim")


class Episode(BaseModel):
    """One graded episode: what a rollout file holds per line."""

    key: str
    """``<mode>/<task id>``: the resume key."""
    mode: str
    task: dict[str, Any]
    family: str
    success: bool
    reward: float
    grade: dict[str, Any] = Field(default_factory=dict)
    finished: str = ""
    """``done``, ``final_action``, ``env_ended``, ``max_turns``, ``invalid_replies`` or ``error``."""
    turns: int = 0
    wall_s: float = 0.0
    error: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    trajectory: dict[str, Any] | None = None


class SimulatorError(RuntimeError):
    """The world model gave no valid observation: the episode says nothing about the agent."""


def episode_key(mode: str, task: AgentTask) -> str:
    return f"{mode}/{task.id}"


class _Session:
    """The environment side of an episode: real (blocking calls in a thread) or simulated (async)."""

    def __init__(self, task: AgentTask, mode: Mode, world_model: WorldModel | None, perturbations: Any = None):
        self.task, self.mode = task, mode
        if mode == "sim":
            if world_model is None:
                raise ValueError("the simulator needs a world model")
            from agentworld.sim.env import SimEnv

            self.sim: Any = SimEnv(world_model, task.scenario(), checks=getattr(task, "sim_checks", list)(),
                                   perturbations=perturbations)
            self.env: Env = self.sim
        else:
            self.sim = None
            self.env = RecordTurns(make(task.env_id, **task.env_kwargs))

    async def reset(self) -> tuple[str, SimContext]:
        if self.sim is not None:
            first = await self.sim.areset(seed=self.task.seed)
            if hasattr(self.task, "seed_ledger"):
                self.task.seed_ledger(self.sim.ledger)
        else:
            first = await asyncio.to_thread(self.env.reset, seed=self.task.seed, options=self.task.reset_options)
        return first.observation, self.env.context()

    async def step(self, action: str) -> Any:
        if self.sim is not None:
            return await self.sim.astep(action)
        return await asyncio.to_thread(self.env.step, action)

    def trajectory(self, trajectory_id: str, agent: str, finished: str) -> Trajectory:
        if self.sim is not None:
            traj = self.sim.record(trajectory_id=trajectory_id)
            traj.provenance.task, traj.provenance.agent, traj.provenance.finished = self.task.family, agent, finished
            return traj
        prov = Provenance(source="real", environment=self.task.env_id, task=self.task.family, seed=self.task.seed,
                          agent=agent, finished=finished, created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        assert isinstance(self.env, RecordTurns)
        return self.env.trajectory(trajectory_id=trajectory_id, provenance=prov)


async def run_episode(policy: Policy, task: AgentTask, *, mode: Mode = "real", world_model: WorldModel | None = None,
                      judge: JudgeFn | None = None, max_turns: int | None = None, max_invalid: int = 3,
                      settings: dict[str, Any] | None = None, perturbations: Any = None,
                      protocol: str = "native") -> Episode:
    """Play ``task`` with ``policy`` and grade it; failures of the environment or the model
    become an episode with ``error`` set (reward 0), never an exception. ``perturbations``
    (a :class:`~agentworld.sim.PerturbationSpec`) apply to simulated episodes; ``protocol``
    (``native`` or ``tools``, the one ``agent train`` teaches) is how the policy is prompted."""
    t0 = time.monotonic()
    limit = max_turns or task.max_turns
    proto = protocol_for(task.domain, protocol)
    base = {"key": episode_key(mode, task), "mode": mode, "task": task.to_record(), "family": task.family,
            "settings": settings or {}}
    session = None
    try:
        session = await asyncio.to_thread(_Session, task, mode, world_model, perturbations)
        first, ctx = await session.reset()
        messages = proto.start(task, first, ctx)
        sent = invalid = 0
        finished = "max_turns"
        final = getattr(task, "is_final", lambda _a: False)
        while sent < limit:
            text = await policy.reply(messages, task=task, turn=sent)
            messages.append({"role": "assistant", "content": text})
            reply = proto.parse(text)
            if reply.done:
                finished = "done"
                break
            if reply.action is None:
                invalid += 1
                if invalid >= max_invalid:
                    finished = "invalid_replies"
                    break
                messages.append({"role": "user", "content": proto.invalid_hint})
                continue
            invalid = 0
            res = await session.step(reply.action)
            sent += 1
            if mode == "sim" and res.info.get("error"):
                # The world model failed (not the agent): no grade, and a rerun plays it again.
                raise SimulatorError(str(res.info["error"]))
            messages.append({"role": proto.role, "content": proto.observation(res.observation)})
            if final(reply.action):
                finished = "final_action"
                break
            if res.terminated or res.truncated:
                finished = "env_ended"
                break
        traj = session.trajectory(f"{mode}-{task.id}", policy.name, finished)
        grade = await asyncio.to_thread(task.grade, session.env, traj, judge=judge)
        return Episode(**base, success=grade.success, reward=grade.reward, grade=grade.to_record(), finished=finished,
                       turns=len(traj.turns), wall_s=round(time.monotonic() - t0, 3),
                       trajectory=traj.model_dump(mode="json", exclude_none=True))
    except Exception as exc:  # noqa: BLE001 - one broken episode must not end a rollout of many
        return Episode(**base, success=False, reward=0.0, finished="error", error=f"{type(exc).__name__}: {exc}",
                       wall_s=round(time.monotonic() - t0, 3))
    finally:
        if session is not None:
            await asyncio.to_thread(session.env.close)
