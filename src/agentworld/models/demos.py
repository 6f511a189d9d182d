"""Demonstrations in context: the fourth part of the simulation context, filled by retrieval.

``demos=K`` (an option of every backend spec, applied by the runner around any backend)
puts the K recorded turns nearest to the action being answered into the system message,
under ``## Demonstrations``, before the simulation instruction and the output format --
where the system prompt's demonstrations part sits -- and before the history.

Where they come from: ``demo_source=PATH`` (trajectory files or a folder of them), by
default the local benchmark's recordings (``benchmarks/local/trajectories`` of this
checkout). Only the train side of the recorded split is used -- every trajectory not
stamped ``provenance.split == "test"``, as ``agentworld data split --split train``
reads it: never the test side a benchmark evaluates, never benchmark sample files, never
the sample's own trajectory, never a turn of another domain. They are found with the retrieval floor's index
(:mod:`agentworld.models.retrieval`): the same per-domain action keys and context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentworld.models.base import BackendError, Message
from agentworld.models.retrieval import (
    DomainIndex,
    PastTurn,
    add_trajectories,
    build_indexes,
    load_turns,
    query_of,
    source_digest,
)
from agentworld.records.trajectory import Trajectory

DEFAULT_SOURCE = Path(__file__).resolve().parents[3] / "benchmarks" / "local" / "trajectories"
"""The checkout's recorded trajectories (their train side is used)."""
TITLE = "## Demonstrations"
# The sections that follow the demonstrations part in our system prompt (prompts.py);
# a system message without them (a published system_str) gets the demos at its end.
_AFTER = ("## Simulation instruction", "## Observation format", "## Output contract")
# Long observations (search pages, file dumps) would crowd out the session itself.
MAX_ACTION_CHARS, MAX_OBSERVATION_CHARS = 600, 1200


@dataclass(frozen=True)
class DemoSettings:
    """``demos=K`` and ``demo_source=PATH`` of a backend spec."""

    k: int = 0
    source: str | None = None

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"demos={self.k}: the number of demonstrations must be 0 or more")

    @property
    def path(self) -> Path:
        return Path(self.source) if self.source else DEFAULT_SOURCE


@dataclass
class Demonstrations:
    """The train-split turns of one source, indexed per domain, and how to render K of them."""

    settings: DemoSettings
    _indexes: dict[str, DomainIndex] = field(default_factory=dict)
    _digest: str = ""

    @classmethod
    def load(cls, settings: DemoSettings) -> Demonstrations:
        path = settings.path
        if not path.exists():
            hint = "pass demo_source=PATH (train-split trajectories)"
            raise BackendError(f"demonstration source not found: {path}; {hint}")
        turns = load_turns(path, trajectories_only=True)  # test-split trajectories are never loaded
        if not any(turns.values()):
            raise BackendError(
                f"no train-split trajectories in {path}: demonstrations come only from trajectory files "
                "(not *_test.jsonl samples) outside the test split; pass demo_source=PATH"
            )
        return cls.of_turns(settings, turns, source_digest(path))

    @classmethod
    def of_trajectories(cls, settings: DemoSettings, trajectories: list[Trajectory], tag: str = "") -> Demonstrations:
        """Demonstrations drawn from ``trajectories`` in memory (their train side), e.g. a
        dataset build's own training trajectories."""
        return cls.of_turns(settings, add_trajectories({}, set(), trajectories), tag)

    @classmethod
    def of_turns(cls, settings: DemoSettings, turns: dict[str, list[PastTurn]], tag: str) -> Demonstrations:
        # No context weight: a demonstration shows what an action like this one returns.
        return cls(settings, build_indexes(turns, context_turns=0, context_weight=0.0), tag)

    @property
    def cache_tag(self) -> dict[str, str | int]:
        """What the response cache keys on: K and the source's identity."""
        return {"demos": self.settings.k, "demo_source": f"{self.settings.path.name}@{self._digest}"}

    def nearest(
        self, domain: str, action: str, history: list[tuple[str, str]], *, exclude_trajectory: str | None = None
    ) -> list[PastTurn]:
        """The K nearest train turns of ``domain``: none from ``exclude_trajectory``, none
        that repeats a turn of this session."""
        index = self._indexes.get(domain)
        if index is None or self.settings.k == 0:
            return []
        seen = set(history)

        def skip(turn: PastTurn) -> bool:
            return turn.trajectory_id == exclude_trajectory or (turn.action, turn.observation) in seen

        return [t for _, t in index.search(action, history, self.settings.k, skip=skip)]

    def apply(self, messages: list[Message], domain: str, *, exclude_trajectory: str | None = None) -> list[Message]:
        """``messages`` with the demonstrations in the system message (one is added when
        there is none); unchanged when none are found."""
        _, history, action = query_of(messages)
        demos = self.nearest(domain, action, history, exclude_trajectory=exclude_trajectory)
        if not demos:
            return messages
        section = render(demos)
        out = [dict(m) for m in messages]
        if out and out[0]["role"] == "system":
            out[0]["content"] = insert_section(out[0]["content"], section)
        else:
            out.insert(0, {"role": "system", "content": section})
        return out


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[...]"


def render(demos: list[PastTurn]) -> str:
    """The demonstrations section: each turn's action and observation, as recorded."""
    parts = [
        f"{TITLE}\nRecorded turns of this environment (other sessions) with actions like the next one:"
    ]
    for i, turn in enumerate(demos, 1):
        parts.append(
            f"Example {i}\nAction:\n{_clip(turn.action, MAX_ACTION_CHARS)}\n"
            f"Observation:\n{_clip(turn.observation, MAX_OBSERVATION_CHARS)}"
        )
    return "\n\n".join(parts) + "\n"


def insert_section(system: str, section: str) -> str:
    """``section`` placed where the system prompt's demonstrations part goes: before the
    first of the simulation instruction, observation format and output contract, else
    at the end."""
    starts = [i for title in _AFTER if (i := system.find("\n" + title)) >= 0]
    if not starts:
        return system.rstrip("\n") + "\n\n" + section
    at = min(starts) + 1
    return system[:at] + section + "\n" + system[at:]
