"""Strict replay: re-run a recorded simulated episode from the response cache.

The recording stores the scenario and perturbation spec next to the turns; with the
cache in replay mode every prediction must come from the cache (a miss raises), and the
replayed observations must equal the recorded ones byte for byte.
"""

from __future__ import annotations

from agentworld.models import WorldModel
from agentworld.records.trajectory import Trajectory
from agentworld.sim.env import SimEnv
from agentworld.sim.perturb import PerturbationSpec
from agentworld.sim.scenario import Scenario


class ReplayMismatch(AssertionError):
    """The replayed episode differs from the recording."""


def replay_episode(world_model: WorldModel, recorded: Trajectory, *, resample: int | None = None) -> int:
    """Replay ``recorded`` (a trajectory from :meth:`SimEnv.record`); return the turns checked."""
    scenario_data = recorded.sim_scenario
    if scenario_data is None:
        raise ReplayMismatch(f"trajectory {recorded.id} has no sim_scenario: only simulated episodes replay")
    spec = recorded.sim_perturbations
    env = SimEnv(
        world_model, Scenario.model_validate(scenario_data),
        perturbations=PerturbationSpec.model_validate(spec) if spec else None,
        resample=resample if resample is not None else max((t.metadata.get("resampled", 0) for t in recorded.turns), default=0),
    )
    env.reset(seed=recorded.provenance.seed)
    for i, turn in enumerate(recorded.turns, 1):
        step = env.step(turn.action)
        if step.observation != turn.observation:
            raise ReplayMismatch(f"turn {i}: replayed observation differs from the recording")
        if [inj["kind"] for inj in step.info["injections"]] != [inj["kind"] for inj in turn.metadata.get("injections", [])]:
            raise ReplayMismatch(f"turn {i}: injections differ from the recording")
    return len(recorded.turns)
