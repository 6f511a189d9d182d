"""Drift: the same actions in a real environment and in the simulator, scored step by step.

``forced`` mode (default) feeds the simulator the real observation after each step, so
every score measures one-step prediction from the true history; ``free`` mode lets the
simulator run on its own predictions, so errors accumulate the way they do when an agent
trains against it. Each step is scored by the offline rule scorer with the real
observation as ground truth. A step diverges when its total falls under ``threshold``,
its factuality under ``min_factuality`` (the content disagrees even if the form is
right), the simulator's ledger flagged a contradiction, or the prediction failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentworld.envs.base import Env
from agentworld.models import Prediction
from agentworld.parsing import Status
from agentworld.records.bench import BenchSample
from agentworld.records.trajectory import SimContext
from agentworld.sim.env import SimEnv
from agentworld.sim.scenario import Scenario


class DriftStep(BaseModel):
    turn: int
    action: str
    real: str
    sim: str
    total: float | None
    """Rule-scorer total (1-5) of the simulated observation against the real one."""
    scores: dict[str, int] = Field(default_factory=dict)
    diverged: bool
    error: str | None = None
    conflicts: int = 0


class DriftReport(BaseModel):
    env: str
    mode: Literal["forced", "free"]
    threshold: float
    steps: list[DriftStep] = Field(default_factory=list)

    @property
    def mean_total(self) -> float | None:
        vals = [s.total for s in self.steps if s.total is not None]
        return sum(vals) / len(vals) if vals else None

    @property
    def diverged_turns(self) -> list[int]:
        return [s.turn for s in self.steps if s.diverged]

    @property
    def first_divergence(self) -> int | None:
        return next(iter(self.diverged_turns), None)

    def summary(self) -> dict[str, object]:
        return {"env": self.env, "mode": self.mode, "steps": len(self.steps), "mean_total": self.mean_total,
                "diverged": len(self.diverged_turns), "first_divergence": self.first_divergence}


def scenario_for(real: Env, first_observation: str, **overrides: object) -> Scenario:
    """A scenario built from a real environment's context and its first observation."""
    ctx = SimContext.of(real.context())
    fields = {
        "domain": real.domain, "task": ctx.task_description, "action_space": ctx.action_space,
        "tools": ctx.tools, "initial_state": ctx.initial_state,
        "first_observation": first_observation, "max_turns": 10**6,
    }
    fields.update(overrides)
    return Scenario(**fields)


def measure_drift(
    real: Env,
    sim: SimEnv,
    actions: Iterable[str],
    *,
    env_name: str = "",
    seed: int | None = 0,
    mode: Literal["forced", "free"] = "forced",
    threshold: float = 3.0,
    min_factuality: int = 3,
    options: dict[str, Any] | None = None,
) -> DriftReport:
    """Run ``actions`` in both environments (both reset first; ``options`` go to the real
    env's reset) and score every step."""
    from agentworld.judge import RuleScorer

    scorer = RuleScorer()
    real.reset(seed=seed, options=options)
    sim.reset(seed=seed)
    report = DriftReport(env=env_name or type(real).__name__, mode=mode, threshold=threshold)
    prompts: list[str] = []
    responses: list[str] = []
    system = sim.scenario.system_prompt()
    for turn, action in enumerate(actions, 1):
        r = real.step(action)
        s = sim.step(action)
        prompts.append(action)
        responses.append(r.observation)
        error = s.info.get("error")
        sample = BenchSample(task=real.domain, id=report.env, prompt=list(prompts), response=list(responses),
                             current_prompt=action, system_str=system, turn_idx=turn, total_turns=turn)
        pred = Prediction(text=s.observation, observation=None if error else s.observation,
                          status=Status.missing if error else Status.complete, error=error)
        j = scorer.score_sync(sample, pred)
        total = j.total if j.ok else None
        conflicts = len(s.info.get("ledger_conflicts", []))
        diverged = (
            error is not None or total is None or total < threshold
            or 0 < j.scores.get("factuality", 0) < min_factuality or conflicts > 0
        )
        report.steps.append(DriftStep(
            turn=turn, action=action, real=r.observation, sim=s.observation, total=total, scores=j.scores,
            diverged=diverged, error=error, conflicts=conflicts,
        ))
        if mode == "forced":
            sim.rewrite_last(r.observation)
        if r.terminated or r.truncated:
            break
        if mode == "free" and (s.terminated or s.truncated):
            break
        sim.state.done = False  # the real env decides when the episode ends
    return report
