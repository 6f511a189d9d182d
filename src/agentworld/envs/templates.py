"""Named, seeded task templates: the registry the scripted task suites of the real
environments share (terminal, desktop). A template turns a seed into one concrete task, the
same seed always the same task; its category is the kind of environment the held-out split
keeps on the train side (:func:`agentworld.envs.split.split_templates`), and its family the
group of near-duplicate templates the split keeps on one side, held out or trained on
together (``agentworld collect``: :func:`agentworld.cli.collect._app.split_jobs`)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentworld.seeding import keyed_rng

T = TypeVar("T")
S = TypeVar("S")


@dataclass
class ScriptedTask(Generic[S]):
    """One seeded task of the scripted suites that keep their reset options apart (mcp,
    search, web): what the agent is asked, how the env is set up, a scripted solution (its
    shape is the domain's: ``S``)."""

    template: str
    description: str
    options: dict[str, Any]
    script: S | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def reset_options(self) -> dict[str, Any]:
        return dict(self.options, task=self.description)


@dataclass(frozen=True)
class Template(Generic[T]):
    name: str
    category: str
    build: Callable[[random.Random], T]
    rng_key: str
    """The seed stream's name (``<domain>-task``): recorded seeds keep giving the same tasks."""
    family: str = ""
    """Near-duplicate templates share a family and land on one side of the split together
    (one template that nearly copies another would put a training episode in the test set);
    empty: the template's own name."""

    def __post_init__(self) -> None:
        if not self.family:
            object.__setattr__(self, "family", self.name)

    def instance(self, seed: int) -> T:
        """The task for ``seed``: the same seed always gives the same task."""
        return self.build(keyed_rng(seed, self.rng_key, self.name))


class TemplateRegistry(Generic[T]):
    """Named templates of one domain; task modules add theirs with the :meth:`add` decorator."""

    def __init__(self, domain: str) -> None:
        self.domain = domain
        self._items: dict[str, Template[T]] = {}
        _REGISTRIES.setdefault(domain, self)

    def add(self, name: str, category: str, *, family: str | None = None
            ) -> Callable[[Callable[[random.Random], T]], Callable[[random.Random], T]]:
        """Register a template; ``family`` names the near-duplicate group it belongs to
        (default: its own name)."""
        def deco(fn: Callable[[random.Random], T]) -> Callable[[random.Random], T]:
            if name in self._items:
                raise ValueError(f"duplicate {self.domain} task template {name!r}")
            self._items[name] = Template(name, category, fn, f"{self.domain}-task", family or name)
            return fn

        return deco

    def get(self, name: str) -> Template[T]:
        if name not in self._items:
            raise KeyError(f"unknown {self.domain} task {name!r} (known: {', '.join(self.names())})")
        return self._items[name]

    def names(self) -> list[str]:
        return sorted(self._items)

    def families(self) -> dict[str, str]:
        """Template -> category (the kinds of environment that keep a training template)."""
        return {n: t.category for n, t in self._items.items()}

    def family_of(self) -> dict[str, str]:
        """Template -> family (near-duplicate templates, split together)."""
        return {n: t.family for n, t in self._items.items()}

    def __len__(self) -> int:
        return len(self._items)


_REGISTRIES: dict[str, TemplateRegistry[Any]] = {}
"""The first registry made for each domain (the task suites'), by domain."""


def template_families(domain: str, names: list[str]) -> dict[str, str]:
    """Template -> family for ``names`` of ``domain``: from the domain's registry when one is
    loaded, else (and for names it lacks) each template its own family."""
    registry = _REGISTRIES.get(domain)
    known = registry.family_of() if registry is not None else {}
    return {n: known.get(n, n) for n in names}
