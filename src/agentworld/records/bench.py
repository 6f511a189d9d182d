"""AgentWorldBench records: one JSONL file per domain, one record per evaluated turn.

Records round-trip exactly: the same keys in the same order with the same values,
unknown keys included. ``prompt``/``response`` hold the turns up to and including the
evaluated one (``turn_idx``, 1-based); readers index them, so files that hold the whole
trajectory load the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from agentworld.domains import DOMAINS, domain_of_task
from agentworld.domains.presented import action_of, present
from agentworld.jsonl import LineError, read_jsonl, write_jsonl
from agentworld.parsing import clean_observation

SUFFIX = "_test.jsonl"


def as_text(value: Any) -> str:
    """Actions/observations are text; structured ones (dicts, lists) become compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class BenchSample(BaseModel):
    model_config = ConfigDict(extra="allow")

    task: str
    id: int | str
    prompt: list[Any]
    response: list[Any]
    current_prompt: Any
    system_str: str
    turn_idx: int = Field(strict=True, ge=1)
    total_turns: int = Field(strict=True, ge=1)

    _key_order: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: Any) -> BenchSample:
        obj = handler(data)
        if isinstance(data, dict):
            obj._key_order = list(data)
        return obj

    @model_validator(mode="after")
    def _turn_in_range(self) -> BenchSample:
        if self.turn_idx > len(self.response) or self.turn_idx > len(self.prompt):
            raise ValueError(
                f"turn_idx {self.turn_idx} is past the end of prompt ({len(self.prompt)}) "
                f"or response ({len(self.response)})"
            )
        domain_of_task(self.task)
        return self

    # -- typed views -------------------------------------------------------------
    @property
    def domain(self) -> str:
        return domain_of_task(self.task)

    @property
    def uid(self) -> str:
        """Unique key of the evaluated turn across a benchmark directory."""
        return f"{self.domain}/{self.id}/{self.turn_idx}"

    @property
    def trajectory(self) -> str:
        """The id of the trajectory this sample evaluates: its ``trajectory_id`` key (an
        extra field of recorded samples), else its id without the ``:TURN`` suffix."""
        return str((self.model_extra or {}).get("trajectory_id") or str(self.id).rsplit(":", 1)[0])

    @property
    def action(self) -> str:
        """The evaluated action as stored (published records frame it in markdown: see
        :mod:`agentworld.domains.presented`); :meth:`with_bare_actions` reads it bare."""
        return as_text(self.current_prompt)

    def with_bare_actions(self) -> BenchSample:
        """This sample with every action bare: ``prompt`` entries and ``current_prompt`` read
        through the published presentation (turn header, current state, ``**Action:**``,
        fence) to the action itself. What reads a record's actions (the rule scorer, the
        leakage check) reads this view, so a presented record and its bare twin are the
        same record to it; the chat messages keep the stored text. ``self`` when nothing
        changes."""
        prompt = [action_of(p) if isinstance(p, str) else p for p in self.prompt]
        current = action_of(self.current_prompt) if isinstance(self.current_prompt, str) else self.current_prompt
        if prompt == self.prompt and current == self.current_prompt:
            return self
        bare = self.model_copy(update={"prompt": prompt, "current_prompt": current})
        bare._key_order = list(self._key_order)
        return bare

    def with_presented_actions(self) -> BenchSample:
        """This sample as published records present it: each text action of ``prompt``
        (and ``current_prompt``) under ``### Turn N`` and ``**Action:**`` in a fence
        (:func:`agentworld.domains.presented.present`); ``with_bare_actions`` reads it back."""
        bare = self.with_bare_actions()
        prompt = [present(p, self.domain, turn=i) if isinstance(p, str) else p for i, p in enumerate(bare.prompt, 1)]
        current = (present(bare.current_prompt, self.domain, turn=self.turn_idx)
                   if isinstance(bare.current_prompt, str) else bare.current_prompt)
        shown = self.model_copy(update={"prompt": prompt, "current_prompt": current})
        shown._key_order = list(self._key_order)
        return shown

    @property
    def ground_truth(self) -> str:
        """The real observation as judged: the stored response without its leading
        ``**Environment Observation:**`` marker (stripped like the prediction's)."""
        return clean_observation(as_text(self.response[self.turn_idx - 1]))

    def history(self) -> list[tuple[str, str]]:
        """(action, observation) pairs of the turns before the evaluated one, markers
        removed (the chat messages use the stored text verbatim instead)."""
        k = self.turn_idx - 1
        return [(as_text(a), clean_observation(as_text(o))) for a, o in zip(self.prompt[:k], self.response[:k], strict=False)]

    def stored_history(self) -> list[tuple[str, str]]:
        """(prompt, response) pairs of the turns before the evaluated one exactly as
        stored, markers kept: what the world model is shown."""
        k = self.turn_idx - 1
        return [(as_text(a), as_text(r)) for a, r in zip(self.prompt[:k], self.response[:k], strict=False)]

    @property
    def turn_prompt(self) -> str:
        """``prompt[turn_idx - 1]``: the last user message the world model answers (the
        published script sends this, not ``current_prompt``; they normally agree)."""
        return as_text(self.prompt[self.turn_idx - 1])

    def to_record(self) -> dict[str, Any]:
        """The JSON record, with the key order it was read with (new keys last)."""
        data = self.model_dump(mode="json", exclude_unset=True)
        order = [k for k in self._key_order if k in data]
        order += [k for k in data if k not in order]
        return {k: data[k] for k in order}


@dataclass
class BenchSet:
    """Samples loaded from a benchmark directory, with every bad line reported."""

    samples: list[BenchSample] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def by_domain(self) -> dict[str, list[BenchSample]]:
        out: dict[str, list[BenchSample]] = {}
        for s in self.samples:
            out.setdefault(s.domain, []).append(s)
        return out


def bench_files(directory: str | Path, domains: Iterable[str] | None = None) -> list[Path]:
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"benchmark directory not found: {directory}")
    wanted = set(domains) if domains else None
    files = []
    for path in sorted(directory.glob(f"*{SUFFIX}")):
        name = path.name[: -len(SUFFIX)]
        if wanted is not None and name not in wanted:
            continue
        files.append(path)
    return files


def load_bench_dir(
    directory: str | Path, *, domains: Iterable[str] | None = None, strict: bool = False
) -> BenchSet:
    """Load every ``<domain>_test.jsonl`` under ``directory`` (optionally only some domains)."""
    out = BenchSet()
    for path in bench_files(directory, domains):
        loaded = read_jsonl(path, BenchSample, strict=strict)
        out.samples.extend(loaded.items)
        out.errors.extend(loaded.errors)
        out.files.append(path)
    return out


def write_bench_dir(directory: str | Path, samples: Iterable[BenchSample]) -> dict[str, int]:
    """Write samples grouped by domain into ``<domain>_test.jsonl`` files; returns counts."""
    groups: dict[str, list[BenchSample]] = {}
    for s in samples:
        groups.setdefault(s.domain, []).append(s)
    counts = {}
    for domain in sorted(groups, key=lambda d: DOMAINS.index(d)):
        counts[domain] = write_jsonl(Path(directory) / f"{domain}{SUFFIX}", groups[domain])
    return counts


def mark_responses(sample: BenchSample) -> BenchSample:
    """``sample`` with every text response in the published stored form (the
    ``**Environment Observation:**`` line, then the observation); already-marked and
    structured (non-text) responses are left as they are, so this is idempotent."""
    from agentworld.prompts import record_response

    marked = [record_response(r) if isinstance(r, str) else r for r in sample.response]
    return sample if marked == sample.response else sample.model_copy(update={"response": marked})


@dataclass
class Reencoded:
    path: Path
    records: int
    changed: int


def reencode_bench_dir(directory: str | Path, out_dir: str | Path | None = None) -> list[Reencoded]:
    """Rewrite every ``<domain>_test.jsonl`` under ``directory`` (into ``out_dir``, or in
    place) with marked responses; ids, order, key order and extra keys are kept. A file
    with a bad line is refused whole (:class:`~agentworld.jsonl.JsonlError`), never
    rewritten without it."""
    target = Path(out_dir) if out_dir is not None else Path(directory)
    done = []
    for path in bench_files(directory):
        samples = read_jsonl(path, BenchSample, strict=True).items
        marked = [mark_responses(s) for s in samples]
        changed = sum(m is not s for m, s in zip(marked, samples, strict=True))
        if changed or target != Path(directory):
            write_jsonl(target / path.name, marked)
        done.append(Reencoded(target / path.name, len(marked), changed))
    return done
