"""Which task templates are held out: the test split is whole templates, not just other seeds.

Re-running a training template with other seeds gives near-copies of training episodes
(the same commands with other numbers), so a benchmark built that way measures recall.
Here each domain's templates are divided once: a template is held out when a hash of
(domain, name) falls under :data:`HELD_OUT_FRACTION`. The rule looks at one name at a
time, so adding or removing templates never moves the others. Guards keep both sides
non-empty and the test side not too small: the lowest-hashed templates are held out
until at least ``int(fraction * n)`` (and one) are, and in each family (terminal category, MCP server; optional) whose templates all fell
under it, the highest-hashed one trains, so no kind of environment is test-only. Test jobs also use their own seeds
(``HELD_OUT`` and up), as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentworld.seeding import unit_hash

HELD_OUT_FRACTION = 0.3
"""Expected share of a domain's templates held out for test."""
SPLIT_RULE = "template-v1"
"""Stamped in each collected trajectory's provenance (``split_by``); bump it if the rule changes."""


@dataclass(frozen=True)
class TemplateSplit:
    """A domain's templates on each side; together they are every template, with no overlap."""

    domain: str
    train: tuple[str, ...]
    test: tuple[str, ...]

    def side(self, name: str) -> str:
        if name in self.test:
            return "test"
        if name in self.train:
            return "train"
        raise KeyError(f"{self.domain} template {name!r} is in neither split")


def _rank(domain: str, name: str) -> float:
    return unit_hash(0, SPLIT_RULE, domain, name)


def split_templates(domain: str, names: Iterable[str], fraction: float = HELD_OUT_FRACTION,
                    families: Mapping[str, str] | None = None) -> TemplateSplit:
    """Divide ``names`` (deterministic: the same names always give the same split).

    ``families`` maps a template to its family (default: every template its own, so
    the only guard is that some template trains)."""
    names = sorted(set(names))
    if len(names) < 2:
        raise ValueError(f"{domain}: a template split needs at least two templates, got {names}")
    # Those under the threshold are a prefix of this order; the minimum extends it.
    ranked = sorted(names, key=lambda n: _rank(domain, n))
    under = sum(_rank(domain, n) < fraction for n in names)
    test = set(ranked[:max(under, 1, int(fraction * len(names)))])
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault((families or {}).get(n, n), []).append(n)
    for group in groups.values():
        if len(group) > 1 and set(group) <= test:
            test.discard(max(group, key=lambda n: _rank(domain, n)))
    if len(test) == len(names):
        test.discard(max(names, key=lambda n: _rank(domain, n)))
    return TemplateSplit(domain, tuple(n for n in names if n not in test), tuple(sorted(test)))
