"""``SimEnv``: a world model played as a Gymnasium-style environment.

Each session keeps its own history, ledger and perturbation counters. A step builds the
turn's prompt (scenario + established state + semantic injections), asks the world model
for the observation, checks it against the ledger (re-sampling a contradicting prediction
when asked to), applies mechanical injections, and records the turn. ``reset``/``step``
are the synchronous Gymnasium calls; ``areset``/``astep`` let one event loop drive many
sessions at once.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, Field

from agentworld.envs.base import Env, EpisodeOver, Reset, Step
from agentworld.envs.record import episode_trajectory, recorded_turn
from agentworld.models import GenerationConfig, Prediction, WorldModel
from agentworld.prompts import build_messages
from agentworld.records.trajectory import Provenance, SimContext, Trajectory
from agentworld.sim.ledger import Conflict, LedgerState, ledger_for
from agentworld.sim.perturb import Injection, PerturbationSpec, apply_mechanical
from agentworld.sim.scenario import Scenario

#: an extra validator of a candidate observation: ``(action, observation) -> conflicts``
Check = Callable[[str, str], list[Conflict]]

#: what a step shows when the world model failed (the step is truncated, not made up)
FAILED = "[simulator error: the world model gave no valid observation]"


class SimTurn(BaseModel):
    action: str
    observation: str
    reasoning: str | None = None
    latency_s: float = 0.0
    injections: list[Injection] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)
    resampled: int = 0
    error: str | None = None
    raw: str | None = None
    """The model's text when it answered without a valid observation (for a person to read)."""


class SimState(BaseModel):
    """A session's complete state: what ``snapshot`` returns and ``restore`` accepts."""

    session_id: str
    scenario: Scenario
    perturbations: PerturbationSpec | None = None
    seed: int = 0
    turns: list[SimTurn] = Field(default_factory=list)
    ledger: LedgerState = Field(default_factory=LedgerState)
    fired: dict[int, int] = Field(default_factory=dict)
    done: bool = False


class SimEnv(Env):
    """A simulated environment over a :class:`~agentworld.models.WorldModel`.

    ``resample`` is how many extra predictions to try when one contradicts the ledger
    (0: keep it and only flag it). ``use_ledger=False`` leaves the established state out
    of the prompt (conflicts are still reported). ``history_turns`` keeps only the last
    that many turns in the prompt (long-lived sessions); the ledger still holds what the
    dropped turns established, and ``record()`` still has every turn. ``checks`` are extra validators
    ``(action, observation) -> list[Conflict]`` (e.g. a fictional world's fact check).

    Registered as ``sim-v1``: ``make("sim-v1", world_model=wm, scenario=sc)``.
    ``reset(options=...)`` takes ``scenario``, ``perturbations`` and ``history`` (earlier
    ``[action, observation]`` turns to continue from, e.g. a benchmark sample's).
    """

    deterministic_reset = True

    def __init__(
        self,
        world_model: WorldModel,
        scenario: Scenario,
        *,
        perturbations: PerturbationSpec | None = None,
        config: GenerationConfig | None = None,
        resample: int = 0,
        use_ledger: bool = True,
        checks: list[Check] | None = None,
        session_id: str | None = None,
        history_turns: int | None = None,
    ):
        if history_turns is not None and history_turns < 0:
            raise ValueError("history_turns must be >= 0")
        self.history_turns = history_turns
        self.wm = world_model
        self.config = config
        self.resample = resample
        self.use_ledger = use_ledger
        self.checks = list(checks or [])
        self.state = SimState(session_id=session_id or uuid.uuid4().hex[:12], scenario=scenario, perturbations=perturbations)
        self.domain = scenario.domain
        self._rules = ledger_for(scenario.domain)

    # -- Gymnasium contract ------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        return self._reset(seed, options)

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        return self._reset(seed, options)

    def step(self, action: str) -> Step:
        messages, injections = self._prepare(action)
        first = self.wm.predict_sync(messages, self.config, **self._request)[0]
        conflicts = self._conflicts(action, first)
        extra = (
            self.wm.predict_sync(messages, self._resample_config(), **self._request) if conflicts and self.resample else []
        )
        return self._finish(action, *self._choose(action, first, conflicts, extra), injections)

    async def astep(self, action: str) -> Step:
        # Prompt building, ledger checks and updates and perturbations are CPU work that
        # grows with the action and the history: they run in a worker thread, so a large
        # action in one session never stalls the event loop that serves the others.
        messages, injections = await anyio.to_thread.run_sync(self._prepare, action)
        first = (await self.wm.predict(messages, self.config, **self._request))[0]
        if not self.resample:
            return await anyio.to_thread.run_sync(self._settle, action, first, None, [], injections)
        conflicts = await anyio.to_thread.run_sync(self._conflicts, action, first)
        extra = await self.wm.predict(messages, self._resample_config(), **self._request) if conflicts else []
        return await anyio.to_thread.run_sync(self._settle, action, first, conflicts, extra, injections)

    def context(self) -> SimContext:
        return self.state.scenario.context

    @property
    def _request(self) -> dict[str, str]:
        # The world model answers in this env's domain; demonstrations (demos=K) never
        # come from the trajectory the scenario was made from.
        return {"domain": self.domain, "exclude_trajectory": self.state.scenario.id}

    @property
    def episode_over(self) -> bool:
        # The session state says (it travels with snapshot/restore/fork).
        return self.state.done

    # -- sessions ------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self.state.session_id

    @property
    def scenario(self) -> Scenario:
        return self.state.scenario

    @property
    def ledger(self) -> LedgerState:
        return self.state.ledger

    @property
    def turn(self) -> int:
        return len(self.state.turns)

    def snapshot(self) -> SimState:
        """A deep copy of the session (history, ledger, perturbation counters)."""
        return self.state.model_copy(deep=True)

    def restore(self, snapshot: SimState) -> None:
        self.state = snapshot.model_copy(deep=True)
        self.domain = self.state.scenario.domain
        self._rules = ledger_for(self.domain)

    def fork(self, *, session_id: str | None = None) -> SimEnv:
        """A new session that continues from this one's current state (GRPO groups, look-ahead)."""
        twin = SimEnv(
            self.wm, self.state.scenario, perturbations=self.state.perturbations, config=self.config,
            resample=self.resample, use_ledger=self.use_ledger, checks=self.checks, history_turns=self.history_turns,
        )
        twin.restore(self.snapshot())
        twin.state.session_id = session_id or uuid.uuid4().hex[:12]
        return twin

    def rewrite_last(self, observation: str) -> None:
        """Replace the last turn's observation (teacher forcing: continue from the real one)
        and rebuild the ledger from the corrected history."""
        st = self.state
        if not st.turns:
            raise RuntimeError("no turn to rewrite")
        st.turns[-1].observation = observation
        st.ledger = LedgerState()
        sc = st.scenario
        self._rules.update(st.ledger, "", sc.first_observation if sc.first_observation is not None else sc.task)
        for t in st.turns:
            if t.error is None:
                self._rules.update(st.ledger, t.action, t.observation)

    def messages_for(self, action: str, instructions: list[str] | None = None) -> list[dict[str, str]]:
        """The chat messages the world model sees for ``action`` at this point."""
        st = self.state
        ledger_text = st.ledger.render() if self.use_ledger and not st.ledger.is_empty() else None
        system = st.scenario.system_prompt(state=ledger_text, instructions=instructions)
        turns = st.turns if self.history_turns is None else st.turns[max(0, len(st.turns) - self.history_turns):]
        return build_messages(system, [(t.action, t.observation) for t in turns], action)

    def record(self, *, trajectory_id: str | None = None) -> Trajectory:
        """The session so far as a Trajectory (provenance ``sim``; injections and conflicts
        in each turn's metadata; the scenario in ``sim_scenario`` for replay).

        The session's own history, not a wrapper's: it includes turns continued from a
        ``history`` reset option, a restored snapshot or a fork. Turns and the trajectory
        are built by the shared recorder (:mod:`agentworld.envs.record`), as
        ``RecordTurns(sim_env)`` would, with the session's per-turn details as metadata."""
        st = self.state
        turns = [
            recorded_turn(t.action, t.observation, {
                "injections": t.injections,
                "conflicts": t.conflicts,
                "resampled": t.resampled,
                **({"error": t.error} if t.error else {}),
            }, reasoning=t.reasoning, duration_s=t.latency_s)
            for t in st.turns
        ]
        return episode_trajectory(
            self, turns, trajectory_id=trajectory_id or f"sim-{st.session_id}",
            provenance=Provenance(source="sim", environment=f"sim/{self.wm.model_id}", task=st.scenario.id, seed=st.seed),
            sim_scenario=st.scenario.model_dump(mode="json"),
            sim_perturbations=st.perturbations.model_dump(mode="json") if st.perturbations else None,
        )

    # -- internals -----------------------------------------------------------------------
    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> Reset:
        options = dict(options or {})
        st = self.state
        scenario = options.pop("scenario", None)
        if scenario is not None:
            st.scenario = scenario if isinstance(scenario, Scenario) else Scenario.model_validate(scenario)
            self.domain = st.scenario.domain
            self._rules = ledger_for(self.domain)
        if "perturbations" in options:
            p = options.pop("perturbations")
            st.perturbations = p if isinstance(p, PerturbationSpec) or p is None else PerturbationSpec.model_validate(p)
        history = _history(options.pop("history", None))
        if options:
            raise ValueError(f"unknown reset options: {', '.join(sorted(options))} (known: scenario, perturbations, history)")
        # Unseeded sessions draw their own seed (and report it), so each gets its own fault
        # schedule instead of all sharing seed 0's; replaying with the reported seed repeats it.
        st.seed = seed if seed is not None else secrets.randbelow(2**31)
        st.turns, st.ledger, st.fired, st.done = [], LedgerState(), {}, False
        sc = st.scenario
        first = sc.first_observation if sc.first_observation is not None else sc.task
        # The first screen may already establish state (a terminal prompt's directory).
        self._rules.update(st.ledger, "", first)
        for action, observation in history:
            st.turns.append(SimTurn(action=action, observation=observation))
            self._rules.update(st.ledger, action, observation)
        if history:
            first = history[-1][1]
        info = {"session_id": st.session_id, "seed": st.seed, "task": sc.task, "domain": sc.domain, "tools": sc.tools or [], "max_turns": sc.max_turns}
        return Reset(first, info)

    def _prepare(self, action: str) -> tuple[list[dict[str, str]], list[Injection]]:
        st = self.state
        if st.done:
            raise EpisodeOver("the episode is over: call reset() before stepping again")
        injections: list[Injection] = []
        if st.perturbations is not None:
            injections = st.perturbations.plan(session_seed=st.seed, turn=self.turn + 1, action=action, fired=st.fired)
        semantic = [i.detail for i in injections if i.mode == "semantic"]
        return self.messages_for(action, semantic), injections

    def _resample_config(self) -> GenerationConfig:
        base = self.wm.settings(self.config)
        # ``resample`` alternatives in one call, with another seed (and some temperature
        # if greedy) so they can differ; a pure function of (session seed, turn) so a
        # replay asks the cache for exactly the same samples.
        retry = GenerationConfig(
            seed=(self.state.seed * 1_000_003 + self.turn * 101 + 1) % 2**31,
            temperature=base.temperature or 0.8,
            n=self.resample,
        )
        return (self.config or GenerationConfig()).merged(retry)

    def _conflicts(self, action: str, pred: Prediction) -> list[Conflict]:
        if not pred.ok or pred.observation is None:
            return []
        found = self._rules.check(self.state.ledger, action, pred.observation)
        for check in self.checks:
            found.extend(check(action, pred.observation))
        return found

    def _choose(
        self, action: str, first: Prediction, conflicts: list[Conflict], extra: list[Prediction]
    ) -> tuple[Prediction, list[Conflict], int]:
        """The valid candidate with the fewest conflicts (the first one on ties)."""
        chosen = first
        for cand in extra:
            if not cand.ok:
                continue
            found = self._conflicts(action, cand)
            if not chosen.ok or len(found) < len(conflicts):
                chosen, conflicts = cand, found
        return chosen, conflicts, len(extra)

    def _settle(self, action: str, first: Prediction, conflicts: list[Conflict] | None, extra: list[Prediction],
                injections: list[Injection]) -> Step:
        if conflicts is None:
            conflicts = self._conflicts(action, first)
        return self._finish(action, *self._choose(action, first, conflicts, extra), injections)

    def _finish(self, action: str, pred: Prediction, conflicts: list[Conflict], tries: int, injections: list[Injection]) -> Step:
        st = self.state
        sc = st.scenario
        error = pred.error or (None if pred.ok else f"prediction {pred.status.value}")
        observation = pred.observation if pred.ok and pred.observation is not None else FAILED
        if error is None:
            for inj in injections:
                if inj.mode == "mechanical" and st.perturbations is not None:
                    params = st.perturbations.rules[inj.rule].merged_params()
                    observation = apply_mechanical(sc.domain, observation, inj, params)
            # The ledger learns from what the agent actually saw. Updated on a copy and
            # swapped in whole: a reader on another thread (the server's /state) never sees
            # it half-changed.
            ledger = st.ledger.model_copy(deep=True)
            self._rules.update(ledger, action, observation)
            st.ledger = ledger
        turn = SimTurn(
            action=action, observation=observation, reasoning=pred.reasoning, latency_s=pred.latency_s,
            injections=injections, conflicts=conflicts, resampled=tries, error=error,
            raw=pred.text if pred.error is None and error is not None else None,
        )
        st.turns.append(turn)
        success = error is None and sc.succeeded(observation)
        truncated = error is not None or (not success and self.turn >= sc.max_turns)
        st.done = success or truncated
        info = {
            "session_id": st.session_id,
            "turn": self.turn,
            "injections": [i.model_dump() for i in injections],
            "ledger_conflicts": [c.model_dump() for c in conflicts],
            "resampled": tries,
            "cached": pred.cached,
            "latency_s": pred.latency_s,
            "error": error,
            # untagged answers (no observation block) are used, as evaluation scores them;
            # the status says so.
            "prediction_status": pred.status.value,
        }
        return Step(observation, 1.0 if success else 0.0, success, truncated, info)


def _history(value: Any) -> list[tuple[str, str]]:
    """The ``history`` reset option: ``[action, observation]`` pairs."""
    if value is None:
        return []
    pairs = []
    for i, turn in enumerate(value if isinstance(value, list | tuple) else [value]):
        if not (isinstance(turn, list | tuple) and len(turn) == 2 and all(isinstance(x, str) for x in turn)):
            raise ValueError(f"reset option history: turn {i} is not an [action, observation] pair of strings")
        pairs.append((turn[0], turn[1]))
    return pairs

