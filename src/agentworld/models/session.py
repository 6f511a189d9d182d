"""A simulated session: a system prompt, the turns so far, and a world model answering.

``load_history`` reads the starting point from a trajectory JSONL file or an
AgentWorldBench JSONL file; :class:`Session` keeps the history as predictions come in
and can be saved as a trajectory (provenance ``sim``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentworld.bench.format import BenchSample
from agentworld.jsonl import LineError, iter_json_lines
from agentworld.models.base import GenerationConfig, Message, Prediction
from agentworld.models.runner import WorldModel
from agentworld.prompts import build_system_prompt, chat_messages, record_response, trajectory_system_prompt
from agentworld.trajectory import Provenance, Trajectory, Turn


class HistoryError(ValueError):
    """The history file cannot be used; the message names the file and line."""


@dataclass
class Start:
    """Where a prediction or a session starts."""

    domain: str
    system: str
    history: list[tuple[str, str]] = field(default_factory=list)
    action: str | None = None
    """The action to answer, when the file names one (a benchmark sample's current action)."""
    source_id: str | None = None
    stored: list[tuple[str, str]] | None = None
    """The history exactly as a benchmark record stores it (markers kept), replayed
    verbatim; None: ``history`` is replayed in the record form."""


def load_history(path: str | Path, *, record_id: str | None = None, turn: int | None = None) -> Start:
    """Read a start point from a trajectory or benchmark JSONL file.

    ``record_id`` picks the record (default: the first). For a trajectory, ``turn``
    (1-based) makes the turns before it the history and its action the one to answer;
    without it all turns are history. A benchmark sample gives its own history and action.
    """
    path = Path(path)
    if not path.exists():
        raise HistoryError(f"history file not found: {path}")
    for lineno, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            raise HistoryError(str(obj))
        if not isinstance(obj, dict) or (record_id is not None and str(obj.get("id")) != record_id):
            continue
        try:
            if "system_str" in obj:
                s = BenchSample.model_validate(obj)
                return Start(s.domain, s.system_str, s.history(), s.turn_prompt, str(s.id), s.stored_history())
            traj = Trajectory.model_validate(obj)
        except ValueError as exc:
            raise HistoryError(f"{path}:{lineno}: {exc}") from None
        turns = [(t.action, t.observation) for t in traj.turns]
        action = None
        if turn is not None:
            if not 1 <= turn <= len(turns):
                raise HistoryError(f"{path}:{lineno}: turn {turn} out of range 1..{len(turns)}")
            turns, action = turns[: turn - 1], turns[turn - 1][0]
        return Start(traj.domain, trajectory_system_prompt(traj), turns, action, traj.id)
    which = f"a record with id {record_id!r}" if record_id is not None else "any record"
    raise HistoryError(f"{path}: no {which}")


def as_shown(history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(a, record_response(o)) for a, o in history]


def fresh_start(domain: str, task: str = "", initial_state: str | None = None) -> Start:
    return Start(domain, build_system_prompt(domain, task_description=task, initial_state=initial_state))


class Session:
    """A running simulated episode with a world model as the environment."""

    def __init__(self, wm: WorldModel, start: Start, config: GenerationConfig | None = None):
        self.wm = wm
        self.start = start
        self.config = config
        self.history: list[tuple[str, str]] = list(start.history)
        # What the model is shown for each turn of ``history``: a record's stored text, or
        # an observation in the record form (kept in step with ``history``).
        self._shown = list(start.stored) if start.stored is not None else as_shown(start.history)

    def messages(self, action: str) -> list[Message]:
        return chat_messages(self.start.system, self._shown, action)

    async def step(self, action: str) -> Prediction:
        """Predict the observation for ``action``; a valid one joins the history."""
        [pred, *_] = await self.wm.predict(self.messages(action), self.config)
        if pred.ok and pred.observation is not None:
            self.history.append((action, pred.observation))
            self._shown += as_shown([(action, pred.observation)])
        return pred

    def undo(self) -> tuple[str, str] | None:
        if len(self.history) <= len(self.start.history):
            return None
        self._shown.pop()
        return self.history.pop()

    def to_trajectory(self, traj_id: str = "session") -> Trajectory:
        return Trajectory(
            id=traj_id,
            domain=self.start.domain,
            provenance=Provenance(source="sim", agent="human", environment=f"sim/{self.wm.model_id}"),
            # The exact system prompt used, so the session can be replayed as it ran.
            system_str=self.start.system,
            turns=[Turn(action=a, observation=o) for a, o in self.history],
        )
