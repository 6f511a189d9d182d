"""A person playing the agent in a simulated session: steps that can be undone, failed
predictions that never join the history, and the session saved as a trajectory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentworld.envs.base import Step
from agentworld.records.trajectory import Trajectory
from agentworld.sim.env import SimEnv, SimState, SimTurn


@dataclass(frozen=True)
class Played:
    """One typed action's outcome: the step, and the turn it made (also when it failed and
    was dropped from the history: its error and raw text are still worth showing)."""

    step: Step
    turn: SimTurn

    @property
    def failed(self) -> bool:
        return bool(self.step.info["error"])


class UndoableSession:
    """Wraps a :class:`SimEnv`: each successful step can be undone (the snapshot taken
    before it is restored); a failed prediction is dropped at once, so the next action
    is answered from the same history."""

    def __init__(self, env: SimEnv) -> None:
        self.env = env
        self._undo: list[SimState] = []

    async def step(self, action: str) -> Played:
        """Play ``action``. A failed prediction is dropped from the history; a cache miss
        (replay mode) propagates and changes nothing."""
        before = self.env.snapshot()
        res = await self.env.astep(action)
        played = Played(res, self.env.state.turns[-1])
        if played.failed:
            self.env.restore(before)
        else:
            self._undo.append(before)
        return played

    def undo(self) -> bool:
        """Drop the last successful turn; False when there is nothing to undo."""
        if not self._undo:
            return False
        self.env.restore(self._undo.pop())
        return True

    def save(self, path: str | Path) -> Trajectory:
        """Append the session to ``path`` as a trajectory: a person was the agent, and the
        exact system prompt is kept (``system_str``) so it can be replayed as it ran."""
        from agentworld.jsonl import JsonlAppender

        data = self.env.record(trajectory_id="session").model_dump(mode="json")
        data["provenance"]["agent"] = "human"
        traj = Trajectory.model_validate({**data, "system_str": self.env.scenario.system_prompt()})
        with JsonlAppender(path) as fh:
            fh.append(traj)
        return traj
