"""The one recorder: :class:`RecordTurns` wraps any environment, real or simulated, and
records every step as a :class:`~agentworld.records.trajectory.Turn`.

In the spirit of Gymnasium's recording wrappers: the wrapper is itself an
:class:`~agentworld.envs.base.Env`, passes ``reset``/``step`` through unchanged, and keeps
what it saw (``turns``); :meth:`RecordTurns.trajectory` turns the episode into a
:class:`~agentworld.records.trajectory.Trajectory` with the environment's context. Every driver
(scripted terminal/mcp/swe episodes, the LLM agent loops, ``record_episode``) records
through it, and ``SimEnv.record`` builds its turns with :func:`recorded_turn`, so ``info``
becomes turn metadata in one way only (:func:`sanitize_info`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.checker import _json_problem
from agentworld.records.trajectory import Provenance, SimContext, Trajectory, Turn


class InfoNotJSON(ValueError):
    """A step's ``info`` holds a value the recorder cannot store as JSON (see :func:`sanitize_info`)."""


def sanitize_info(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON-ready turn metadata; the one rule for every recorder.

    JSON values (str, int, finite float, bool, None, lists, dicts with string keys) are
    kept as they are. These are converted, because their JSON form is unambiguous:
    tuples, sets and frozensets become lists (sets sorted when they can be), pydantic
    models their JSON dump, dataclasses dicts, enums their value, paths strings. Anything
    else (bytes, NaN or infinity, non-string dict keys, arbitrary objects) raises
    :class:`InfoNotJSON` naming the key: nothing is dropped or stringified silently.
    (:func:`~agentworld.envs.check_env` already rejects every non-JSON ``info``.)
    """
    if not isinstance(info, dict):
        raise InfoNotJSON(f"info is a {type(info).__name__}, not a dict")
    out = {k: _convert(v) for k, v in info.items()}
    if problem := _json_problem(out):
        raise InfoNotJSON(f"info is not JSON: {problem} (see agentworld.envs.record.sanitize_info)")
    return out


def _convert(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _convert(dataclasses.asdict(value))
    if isinstance(value, enum.Enum):
        return _convert(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, set | frozenset):
        items = [_convert(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, list | tuple):
        return [_convert(v) for v in value]
    if isinstance(value, dict):
        return {k: _convert(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return value  # reported by the JSON check, with its key
    return value


def recorded_turn(action: str, observation: str, info: dict[str, Any], *, started_at: float | None = None,
                  duration_s: float | None = None, reasoning: str | None = None) -> Turn:
    """One recorded turn: ``info`` becomes the metadata through :func:`sanitize_info`."""
    return Turn(action=action, observation=observation, reasoning=reasoning, started_at=started_at,
                duration_s=duration_s, metadata=sanitize_info(info))


def episode_trajectory(env: Env, turns: list[Turn], *, trajectory_id: str, provenance: Provenance,
                       **extra: Any) -> Trajectory:
    """``turns`` of an episode in ``env`` as a Trajectory, with the env's simulation context.
    ``extra`` are further Trajectory fields (``final_answer``, ``sim_scenario``...)."""
    context = SimContext.of(env.context())
    return Trajectory(id=trajectory_id, domain=env.domain, provenance=provenance, turns=turns,
                      **extra, **context.model_dump())


class UnchangedStep(RuntimeError):
    """A step that was expected to change the observation left it as it was (the action was
    lost: a click on a covered window, a menu item not found); see ``RecordTurns(expect_change=...)``."""


class RecordTurns(Env):
    """Records every step of the wrapped environment; ``reset`` starts a new recording.

    ``turns`` holds the episode so far; :meth:`trajectory` returns it as a Trajectory.
    The wrapped environment stays reachable as ``env`` (``unwrapped`` for the innermost).
    With ``drop_unchanged`` (GUI domains, SPEC section 5), a step whose observation equals the
    one before it, up to whitespace, is not kept unless it ended the episode: the action
    still ran, and the state chain reads the same without it (``dropped`` counts them).
    With ``expect_change`` as well (scripted drivers), such a step raises
    :class:`UnchangedStep` when ``expect_change(action)`` is true, instead of vanishing: a
    script's lost action must fail its episode, not leave a trajectory whose task text says
    what never happened. Only the actions it returns False for are dropped.
    """

    def __init__(self, env: Env, *, drop_unchanged: bool = False,
                 expect_change: Callable[[str], bool] | None = None):
        self.env = env
        self.turns: list[Turn] = []
        self.drop_unchanged = drop_unchanged
        self.expect_change = expect_change
        self.dropped = 0
        self._last = ""

    @property  # type: ignore[override]
    def domain(self) -> str:
        return self.env.domain

    @property
    def unwrapped(self) -> Env:
        inner = self.env
        return inner.unwrapped if isinstance(inner, RecordTurns) else inner

    @property
    def deterministic_reset(self) -> bool:  # type: ignore[override]
        return self.env.deterministic_reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        res = self.env.reset(seed=seed, options=options)
        self.turns = []
        self._last = res.observation
        return res

    def step(self, action: str) -> Step:
        t0 = time.time()
        res = self.env.step(action)
        if self.drop_unchanged:
            unchanged = " ".join(res.observation.split()) == " ".join(self._last.split())
            self._last = res.observation
            if unchanged and not (res.terminated or res.truncated):
                if self.expect_change is not None and self.expect_change(action):
                    raise UnchangedStep(f"the observation did not change after the action {action!r} "
                                        f"(after {len(self.turns)} recorded turns)")
                self.dropped += 1
                return res
        self.turns.append(recorded_turn(action, res.observation, res.info, started_at=t0,
                                        duration_s=time.time() - t0))
        return res

    def context(self) -> SimContext:
        return SimContext.of(self.env.context())

    def close(self) -> None:
        self.env.close()

    def trajectory(self, *, trajectory_id: str, provenance: Provenance, **extra: Any) -> Trajectory:
        """The episode recorded so far (a copy of the turns)."""
        return episode_trajectory(self.env, list(self.turns), trajectory_id=trajectory_id,
                                  provenance=provenance, **extra)


def play_script(rec: RecordTurns, policy: Generator[str, str, None], *, max_steps: int,
                before_step: Callable[[], None] | None = None) -> None:
    """Step ``rec`` with the actions a scripted policy yields, sending each step's observation
    back (so it can act on what it sees), until the policy stops, the episode ends, or
    ``max_steps`` actions. ``before_step`` runs before each action (e.g. a time budget)."""
    try:
        action = next(policy)
        for _ in range(max_steps):
            if before_step is not None:
                before_step()
            res = rec.step(action)
            if res.terminated or res.truncated:
                return
            action = policy.send(res.observation)
    except StopIteration:
        pass


def record_episode(
    env: Env,
    actions: Iterable[str],
    *,
    trajectory_id: str,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    provenance: Provenance | None = None,
) -> Trajectory:
    """Run ``actions`` in ``env`` from a fresh reset and record every turn (until the
    episode ends or the actions run out)."""
    rec = RecordTurns(env)
    rec.reset(seed=seed, options=options)
    for action in actions:
        res = rec.step(action)
        if res.terminated or res.truncated:
            break
    return rec.trajectory(trajectory_id=trajectory_id, provenance=provenance or Provenance(source="real", seed=seed))
