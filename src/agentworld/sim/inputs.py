"""What a simulation starts from: a scenario (from a file, a trajectory, tool schemas or a
fictional world), its fact checks and its perturbations; and the fictional world files.

Every user mistake is a :class:`SetupError` carrying a hint, so a caller (the CLI) can show
it without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.sim.perturb import PerturbationSpec
from agentworld.sim.scenario import Scenario


class SetupError(ValueError):
    """A simulation input the user can fix; ``hint`` says how."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass
class ScenarioSetup:
    """The scenario a simulation plays and the checks its predictions are held to."""

    scenario: Scenario
    checks: list[Callable[..., Any]] = field(default_factory=list)


def world_questions(world: Path) -> list[Any]:
    """The questions written next to a world database."""
    from agentworld.sim.worlds import load_questions

    try:
        return load_questions(world)
    except FileNotFoundError as exc:
        raise SetupError(str(exc), "agentworld sim world build writes it next to the database") from None


def world_and_question(world: Path, question: str | None) -> tuple[Any, Any]:
    """The world at ``world`` and its question ``question`` (default: the first)."""
    from agentworld.sim.worlds import FictionalWorld, questions_path

    try:
        w = FictionalWorld.load(world)
    except FileNotFoundError as exc:
        raise SetupError(str(exc), "build one with: agentworld sim world build --out world.sqlite") from None
    q = next((x for x in world_questions(world) if question in (None, x.id)), None)
    if q is None:
        raise SetupError(f"no question {question!r} in {questions_path(world)}", "list them with: agentworld sim world show")
    return w, q


def load_scenario_setup(
    *, scenario: Path | None = None, trajectory: Path | None = None, record_id: str | None = None,
    tools: Path | None = None, world: Path | None = None, question: str | None = None,
) -> ScenarioSetup:
    """The scenario from the first source given, in this order: a fictional world (with its
    fact check), a scenario file, a recorded trajectory's context, an mcp tool list."""
    from agentworld.sim.loading import InputError, load_scenario, load_tools, load_trajectory
    from agentworld.sim.worlds import world_check, world_scenario

    try:
        if world is not None:
            w, q = world_and_question(world, question)
            return ScenarioSetup(world_scenario(w, q), [world_check(w)])
        if scenario is not None:
            return ScenarioSetup(load_scenario(scenario))
        if trajectory is not None:
            return ScenarioSetup(Scenario.from_trajectory(load_trajectory(trajectory, record_id)))
        if tools is not None:
            return ScenarioSetup(Scenario(id=tools.stem, domain="mcp", tools=load_tools(tools)))
    except InputError as exc:
        raise SetupError(str(exc), "check the file, or see agentworld sim --help") from None
    raise SetupError("no scenario given", "pass --scenario, --trajectory, --tools or --world")


def load_perturbations(path: Path | None) -> PerturbationSpec | None:
    """The perturbation spec at ``path``, or None without one."""
    if path is None:
        return None
    try:
        return PerturbationSpec.load(path)
    except (OSError, ValueError) as exc:
        raise SetupError(str(exc), "see configs/perturbations/ for examples") from None


@dataclass(frozen=True)
class WorldSummary:
    path: Path
    pages: int
    facts: int
    questions: int


def build_world_files(path: Path, *, seed: int = 0, questions: int = 20) -> WorldSummary:
    """Build a seeded fictional world database at ``path`` and write its questions next to
    it (``*.questions.jsonl``)."""
    from agentworld.sim.worlds import FictionalWorld, build_world, save_questions, write_questions

    build_world(path, seed=seed)
    qs = write_questions(path, seed=seed, count=questions)
    save_questions(path, qs)
    w = FictionalWorld.load(path)
    return WorldSummary(path=path, pages=len(w.pages), facts=w.num_facts, questions=len(qs))
