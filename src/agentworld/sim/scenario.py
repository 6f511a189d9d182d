"""What a simulated episode is about: the scenario a world model plays out.

A scenario holds the published controllable-simulation parts (task, tool schemas,
initial state, hidden environment summary, simulation instructions, the end state that
counts as success) and turns them into the system prompt for each turn. The hidden
summary is shown to the world model only, never to the agent.
"""

from __future__ import annotations

from typing import Any

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.domains import domain_of_task
from agentworld.domains.terminal.screen import PROMPT_START as _LEADING_PROMPT
from agentworld.prompts import build_system_prompt
from agentworld.records.trajectory import SimContext, Trajectory

MAX_PATTERNS, MAX_PATTERN_CHARS = 32, 1000
PATTERN_TIMEOUT_S = 0.5


class Scenario(BaseModel):
    """One simulated environment: everything the world model needs besides the actions."""

    model_config = ConfigDict(extra="forbid")

    id: str = "scenario"
    domain: str
    task: str = ""
    """What the agent is asked to do (shown to agent and world model)."""
    action_space: str | None = None
    """Action-space text; None means the domain's default."""
    tools: list[dict[str, Any]] | None = None
    """Tool schemas (mcp, swe, search): the tools that exist in this environment."""
    initial_state: str | None = None
    """State known before the first action (OS, files, DB contents)."""
    hidden_summary: str | None = None
    """Facts only the simulator knows (DB rows, permissions); consistent answers rely on it."""
    demonstrations: str | None = None
    simulation_instruction: str | None = None
    """Standing instruction for every turn (per-turn ones come from perturbations)."""
    success_state: str | None = None
    """The end state that counts as success, in words (shown to the world model)."""
    success_patterns: list[str] = Field(default_factory=list)
    """Regular expressions; when all match the latest observation the episode succeeds."""
    first_observation: str | None = None
    """What ``reset`` shows the agent; defaults to the task text."""
    max_turns: int = 30
    system: str | None = None
    """A fixed system prompt used as is instead of one built from the parts above (a
    benchmark sample's ``system_str``); the session's state and per-turn instructions are
    still added after it."""

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, v: str) -> str:
        return domain_of_task(v)

    @field_validator("success_patterns")
    @classmethod
    def _patterns_compile(cls, v: list[str]) -> list[str]:
        if len(v) > MAX_PATTERNS:
            raise ValueError(f"at most {MAX_PATTERNS} success patterns, got {len(v)}")
        for i, p in enumerate(v):
            if len(p) > MAX_PATTERN_CHARS:
                raise ValueError(f"success pattern {i} is {len(p)} characters long (at most {MAX_PATTERN_CHARS})")
            try:
                regex.compile(p)
            except regex.error as exc:
                raise ValueError(f"success pattern {i} {p[:80]!r} is not a valid regular expression: {exc}") from None
        return v

    @classmethod
    def from_trajectory(cls, traj: Trajectory, **overrides: Any) -> Scenario:
        """A scenario that reproduces a recorded episode's context (actions come separately)."""
        fields: dict[str, Any] = {
            "id": traj.id,
            "domain": traj.domain,
            **cls.context_fields(traj.context),
            "hidden_summary": traj.hidden_summary,
            "max_turns": max(30, len(traj.turns)),
        }
        if traj.domain == "terminal" and traj.turns:
            # The screen before the first command: the prompt that command was typed at.
            m = _LEADING_PROMPT.match(traj.turns[0].observation)
            if m:
                fields["first_observation"] = m.group(0)
        fields.update(overrides)
        return cls(**fields)

    def system_prompt(self, *, state: str | None = None, instructions: list[str] | None = None) -> str:
        """The system prompt for one turn: ``state`` is the session's established state,
        ``instructions`` the turn's extra simulation instructions."""
        if self.system is not None:
            extra = [f"Established so far in this session (stay consistent with it):\n{state}" if state else None,
                     "\n".join(f"- {s}" for s in instructions) if instructions else None]
            return "\n\n".join([self.system, *(p for p in extra if p)])
        initial = "\n\n".join(
            p
            for p in (
                self.initial_state,
                f"Hidden environment facts (the agent cannot see these; stay consistent with them):\n{self.hidden_summary}"
                if self.hidden_summary
                else None,
                f"Established so far in this session (stay consistent with it):\n{state}" if state else None,
            )
            if p
        )
        sim = [self.simulation_instruction] if self.simulation_instruction else []
        if self.success_state:
            sim.append(f"When the agent reaches this end state, show it faithfully: {self.success_state}")
        sim.extend(instructions or [])
        return build_system_prompt(self.domain, self.context.model_copy(update={
            "initial_state": initial or None,
            "simulation_instruction": "\n".join(f"- {s}" for s in sim) if sim else None,
        }))

    def succeeded(self, observation: str) -> bool:
        """Whether every success pattern matches ``observation``. Patterns come from clients,
        so each search has a time limit: a catastrophically backtracking one counts as no
        match instead of holding a CPU forever."""
        if not self.success_patterns:
            return False
        try:
            return all(regex.search(p, observation, timeout=PATTERN_TIMEOUT_S) for p in self.success_patterns)
        except TimeoutError:
            return False

    @property
    def context(self) -> SimContext:
        """The scenario's simulation context (what a recorded episode carries; the hidden
        summary and success state stay the simulator's)."""
        return SimContext(task_description=self.task, action_space=self.action_space, tools=self.tools,
                          initial_state=self.initial_state, demonstrations=self.demonstrations,
                          simulation_instruction=self.simulation_instruction)

    @staticmethod
    def context_fields(context: SimContext) -> dict[str, Any]:
        """Scenario fields from a simulation context (the task description is ``task``)."""
        fields = context.model_dump()
        fields["task"] = fields.pop("task_description")
        return fields
