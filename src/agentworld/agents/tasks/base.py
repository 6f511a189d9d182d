"""Tasks with verifiable rewards, played unchanged in a real environment or the simulator.

A task is one seeded instance of a family (template): the instruction the agent reads,
how to build the real environment (``env_id``, ``env_kwargs``, ``reset_options``), the
scenario the simulator plays instead, a scripted solution (the oracle the tests and the
CPU experiments use as a ceiling), and a grader. Grading yields a :class:`Grade`: a
success predicate (every check passed), a partial-credit reward in [0, 1], and for each
check *what decided it* -- the real sandbox, the real MCP servers, the world's database,
the simulator's ledger, or a judge where the ledger cannot tell.
"""

from __future__ import annotations

import abc
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agentworld.envs.base import Env
from agentworld.records.trajectory import Trajectory
from agentworld.seeding import keyed_rng
from agentworld.sim.scenario import Scenario

Decider = Literal["sandbox", "mcp", "world_db", "ledger", "replay", "rule_judge", "llm_judge"]

JudgeFn = Callable[[str, Trajectory], bool | None]
"""An LLM judge: (what must hold, the episode) -> whether it holds (None: no verdict)."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    decided_by: Decider
    weight: float = 1.0
    detail: str = ""


@dataclass(frozen=True)
class Grade:
    """The verdict on one episode: success (every check passed) and partial credit."""

    checks: tuple[CheckResult, ...]
    reward_override: float | None = None
    """A graded quantity other than the share of checks passed (search: item F1)."""

    @property
    def success(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def reward(self) -> float:
        if self.reward_override is not None:
            return max(0.0, min(1.0, self.reward_override))
        total = sum(c.weight for c in self.checks)
        return 0.0 if not total else sum(c.weight for c in self.checks if c.passed) / total

    @property
    def decided_by(self) -> list[str]:
        return sorted({c.decided_by for c in self.checks})

    def to_record(self) -> dict[str, Any]:
        return {"success": self.success, "reward": round(self.reward, 6), "decided_by": self.decided_by,
                "checks": [{"name": c.name, "passed": c.passed, "decided_by": c.decided_by,
                            **({"detail": c.detail} if c.detail else {})} for c in self.checks]}


@dataclass
class AgentTask(abc.ABC):
    """One seeded task. Subclasses (one per domain) hold the checks and grade them."""

    family: str
    seed: int
    instruction: str
    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    reset_options: dict[str, Any] = field(default_factory=dict)
    solution: list[str] = field(default_factory=list)
    """A scripted solution: actions that succeed in the real environment."""
    max_turns: int = 12

    domain: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}-{self.seed}"

    @abc.abstractmethod
    def scenario(self) -> Scenario:
        """What the simulator plays for this task (same instruction, tools and initial state)."""

    @abc.abstractmethod
    def grade(self, env: Env, trajectory: Trajectory, *, judge: JudgeFn | None = None) -> Grade:
        """Grade the episode ``env`` just played (before it is closed): real envs are
        inspected directly, a ``SimEnv`` through its ledger and, where that cannot tell,
        ``judge`` (else the rule judge over the trajectory)."""

    def to_record(self) -> dict[str, Any]:
        return {"id": self.id, "family": self.family, "domain": self.domain, "seed": self.seed,
                "instruction": self.instruction, "env_id": self.env_id}


@dataclass(frozen=True)
class TaskContext:
    """What some families need besides the seed: the fictional world search tasks ask about."""

    world: str | None = None
    """Path of a world database (``agentworld sim world build``)."""


Builder = Callable[[random.Random, int, TaskContext], AgentTask]


@dataclass(frozen=True)
class Family:
    """A task template: a seeded builder (``seed -> task``) in one domain."""

    name: str
    domain: str
    build: Builder

    def instance(self, seed: int, context: TaskContext | None = None) -> AgentTask:
        return self.build(keyed_rng(seed, "agent-task", self.name), seed, context or TaskContext())


class FamilyRegistry:
    def __init__(self) -> None:
        self._items: dict[str, Family] = {}

    def add(self, name: str, domain: str) -> Callable[[Builder], Builder]:
        def deco(fn: Builder) -> Builder:
            if name in self._items:
                raise ValueError(f"duplicate agent task family {name!r}")
            self._items[name] = Family(name, domain, fn)
            return fn

        return deco

    def get(self, name: str) -> Family:
        if name not in self._items:
            raise KeyError(f"unknown task family {name!r} (known: {', '.join(sorted(self._items))})")
        return self._items[name]

    def names(self, domain: str | None = None) -> list[str]:
        return sorted(n for n, f in self._items.items() if domain is None or f.domain == domain)

    def __len__(self) -> int:
        return len(self._items)


def unwrap(env: Env) -> Env:
    """The innermost environment under recording wrappers."""
    while hasattr(env, "env") and isinstance(env.env, Env):
        env = env.env
    return env
