"""Turning trajectories into benchmark samples: which turns get evaluated.

Policies (docs/design.md#benchmark-records-and-scoring):
- ``all``: every turn;
- ``spread``: first, last and three middle turns evenly spaced between them (all turns
  when there are five or fewer) -- the published choice for text domains;
- ``random``: one turn per trajectory, drawn from a seeded hash of its id.
Then an optional ``fraction`` keeps a seeded share of the chosen samples (the published
set keeps 50%). Every draw hashes (seed, trajectory id, turn), so adding trajectories
never changes the choice for the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import StrEnum

from agentworld.prompts import record_response, trajectory_system_prompt
from agentworld.records.bench import BenchSample
from agentworld.records.trajectory import Trajectory
from agentworld.seeding import keyed_rng, unit_hash


class TurnPolicy(StrEnum):
    all = "all"
    spread = "spread"
    random = "random"


def spread_turns(n: int, middle: int = 3) -> list[int]:
    """First, last and ``middle`` evenly spaced turns between them (1-based)."""
    if n <= middle + 2:
        return list(range(1, n + 1))
    inner = {1 + round(i * (n - 1) / (middle + 1)) for i in range(1, middle + 1)}
    return sorted({1, n} | inner)


def select_turns(traj: Trajectory, policy: TurnPolicy | str, seed: int = 0) -> list[int]:
    n = len(traj.turns)
    if n == 0:
        return []
    policy = TurnPolicy(policy)
    if policy is TurnPolicy.all:
        return list(range(1, n + 1))
    if policy is TurnPolicy.spread:
        return spread_turns(n)
    return [keyed_rng(seed, "turn", traj.id).randint(1, n)]


def make_sample(traj: Trajectory, turn_idx: int, *, system_str: str | None = None) -> BenchSample:
    """The benchmark record that evaluates turn ``turn_idx`` of ``traj``; responses are
    stored as the published set stores them (marker line, then the observation)."""
    turns = traj.turns[:turn_idx]
    return BenchSample(
        task=traj.domain,
        id=f"{traj.id}:{turn_idx}",
        prompt=[t.action for t in turns],
        response=[record_response(t.observation) for t in turns],
        current_prompt=turns[-1].action,
        system_str=system_str if system_str is not None else trajectory_system_prompt(traj),
        turn_idx=turn_idx,
        total_turns=len(traj.turns),
        trajectory_id=traj.id,
        source=traj.provenance.source,
    )


def trajectories_to_samples(
    trajectories: Iterable[Trajectory],
    *,
    policy: TurnPolicy | str = TurnPolicy.spread,
    fraction: float | None = None,
    seed: int = 0,
) -> Iterator[BenchSample]:
    if fraction is not None and not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    for traj in trajectories:
        system = trajectory_system_prompt(traj)
        for k in select_turns(traj, policy, seed):
            if fraction is not None and unit_hash(seed, "keep", traj.id, k) >= fraction:
                continue
            yield make_sample(traj, k, system_str=system)
