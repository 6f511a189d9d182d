"""The trajectory record: one episode of an agent in an environment.

A trajectory carries the five parts of the simulation context (docs/design.md#context-and-messages) and
its turns. Records are versioned and keep fields they do not know, so files written
by newer versions or other tools survive a read/write cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from agentworld.domains import domain_of_task
from agentworld.jsonl import Loaded, read_jsonl, write_jsonl

SCHEMA_VERSION = 1


class _OmitUnsetNone(BaseModel):
    """Optional fields declared after files were already written: a value that was never
    set (None by default) is left out of the dump, so records that lack the key are
    written back byte for byte as they were read."""

    _omit_when_unset: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self._omit_when_unset:
                if data.get(name, 0) is None and name not in self.model_fields_set:
                    del data[name]
        return data


class SimContext(BaseModel):
    """The five parts of the simulation context (docs/design.md#context-and-messages), in one model.

    Shared by :class:`Trajectory` (whose JSONL keeps them as top-level keys; see
    :attr:`Trajectory.context`), the simulator's scenario, ``Env.context()`` and
    :func:`agentworld.prompts.build_system_prompt`. The action space is one part with
    two carriers: its text and, for tool domains, the tool schemas.
    """

    model_config = ConfigDict(extra="forbid")

    task_description: str = ""
    """What the agent was asked to do."""
    action_space: str | None = None
    """Action-space text; None means the domain's default text."""
    tools: list[dict[str, Any]] | None = None
    """Tool schemas (mcp, swe, search): the episode's own action space."""
    initial_state: str | None = None
    """OS, installed tools, files, DB contents... known before the first action."""
    demonstrations: str | None = None
    simulation_instruction: str | None = None
    """E.g. 'pip install fails with Errno 28 No space left on device'."""

    @classmethod
    def of(cls, value: SimContext | dict[str, Any] | None) -> SimContext:
        """A context from a model or a mapping of its fields (unknown keys are an error)."""
        if value is None:
            return cls()
        return value if isinstance(value, SimContext) else cls.model_validate(value)


class Turn(BaseModel):
    """One step: the agent's action and the environment's observation."""

    model_config = ConfigDict(extra="allow")

    action: str
    """The action as the world model sees it (JSON text for structured actions)."""
    observation: str
    """The real (or simulated) observation that followed."""
    reasoning: str | None = None
    """Optional reasoning that precedes the observation in thinking-style targets."""
    started_at: float | None = None
    """Unix time at which the action was sent."""
    duration_s: float | None = None
    """Wall time the environment took to answer."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def action_json(self) -> Any:
        """The action parsed as JSON (terminal keystroke lists, tool calls); raises if not JSON."""
        return json.loads(self.action)


class Provenance(_OmitUnsetNone):
    """Where a trajectory came from, so datasets and benchmarks can be audited."""

    model_config = ConfigDict(extra="allow")
    _omit_when_unset = frozenset({"finished", "job_id", "split"})

    source: str = "unknown"
    """``real`` (recorded in a real environment), ``sim``, ``import`` or ``synthetic``."""
    environment: str | None = None
    """Environment id, e.g. ``terminal/debian-bookworm`` or ``mcp/server-git``."""
    task: str | None = None
    """Task template or task id that produced the episode."""
    seed: int | None = None
    agent: str | None = None
    """``scripted`` or the agent model name."""
    created_at: str | None = None
    finished: str | None = None
    """Why an agent-driven episode ended (``done``, ``max_steps``, ``invalid_actions``,
    ``terminated``); absent for scripted episodes."""
    job_id: str | None = None
    """The collection job that recorded the episode: the resume key of ``agentworld
    collect`` (absent outside collection: the trajectory id plays that role)."""
    split: str | None = None
    """``train`` or ``test``: the side of the split the collection job was on. Test
    trajectories are the benchmark's; training sets exclude them."""

    @field_validator("job_id", mode="before")
    @classmethod
    def _job_id_as_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v


class Trajectory(_OmitUnsetNone):
    """An episode: simulation context (five system-prompt parts) plus turns.

    The context parts are top-level fields (the JSONL layout); :attr:`context` views
    them as one :class:`SimContext`.
    """

    model_config = ConfigDict(extra="allow")
    _omit_when_unset = frozenset({"final_answer", "bug", "hidden_summary", "sim_scenario", "sim_perturbations"})

    schema_version: int = SCHEMA_VERSION
    id: str
    domain: str
    provenance: Provenance = Field(default_factory=Provenance)
    task_description: str = ""
    """What the agent was asked to do."""
    action_space: str | None = None
    """Action-space text; None means the domain's default text."""
    tools: list[dict[str, Any]] | None = None
    """Tool schemas (mcp, swe): the trajectory's own action space."""
    initial_state: str | None = None
    """OS, installed tools, files, DB contents... known before the first action."""
    demonstrations: str | None = None
    simulation_instruction: str | None = None
    """E.g. 'pip install fails with Errno 28 No space left on device'."""
    turns: list[Turn] = Field(default_factory=list)
    # Optional fields written by some recorders (declared after ``turns``, where files
    # already have them; left out of the dump when unset).
    final_answer: str | None = None
    """The agent's closing answer (tool-calling agent episodes)."""
    bug: dict[str, Any] | None = None
    """The injected bug of a scripted SWE repair episode (repo, mutation, failing tests)."""
    hidden_summary: str | None = None
    """Facts only the simulator may see (fictional worlds); becomes the scenario's."""
    sim_scenario: dict[str, Any] | None = None
    """The scenario a simulated episode was played in (``SimEnv.record``): what replay needs."""
    sim_perturbations: dict[str, Any] | None = None
    """The perturbation spec of a simulated episode (None: unperturbed)."""

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, v: str) -> str:
        return domain_of_task(v)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @property
    def context(self) -> SimContext:
        """The five context parts as one model (a copy: edit the fields, not the view)."""
        return SimContext(**{name: getattr(self, name) for name in SimContext.model_fields})

    @property
    def num_turns(self) -> int:
        return len(self.turns)


def read_trajectories(path: str | Path, *, strict: bool = False) -> Loaded[Trajectory]:
    return read_jsonl(path, Trajectory, strict=strict)


def write_trajectories(path: str | Path, trajectories: list[Trajectory]) -> int:
    return write_jsonl(path, trajectories)
