"""The trajectory record: one episode of an agent in an environment.

A trajectory carries the five parts of the simulation context (SPEC section 3) and
its turns. Records are versioned and keep fields they do not know, so files written
by newer versions or other tools survive a read/write cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.domains import domain_of_task
from agentworld.jsonl import Loaded, read_jsonl, write_jsonl

SCHEMA_VERSION = 1


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


class Provenance(BaseModel):
    """Where a trajectory came from, so datasets and benchmarks can be audited."""

    model_config = ConfigDict(extra="allow")

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


class Trajectory(BaseModel):
    """An episode: simulation context (five system-prompt parts) plus turns."""

    model_config = ConfigDict(extra="allow")

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

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, v: str) -> str:
        return domain_of_task(v)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @property
    def num_turns(self) -> int:
        return len(self.turns)


def read_trajectories(path: str | Path, *, strict: bool = False) -> Loaded[Trajectory]:
    return read_jsonl(path, Trajectory, strict=strict)


def write_trajectories(path: str | Path, trajectories: list[Trajectory]) -> int:
    return write_jsonl(path, trajectories)
