"""The seven domains one world model covers, and their registry.

Each domain has one home here (``agentworld.domains.terminal`` ...) holding its
knowledge: prompt wording, action and observation formats (``SPEC``), and for the
domains with state, one extractor ``effects(action, observation) -> Effects`` of what an
action did, which the simulator's ledger and the RL rule verifiers both read. Shared
pieces: :mod:`.effects` (the Effects type), :mod:`.toolcall` (tool calls, mcp and swe),
:mod:`.sql` (SQL statements), :mod:`.errors` (what an error observation looks like).
This package imports nothing heavy: every other layer builds on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from agentworld.domains import android, mcp, os, search, swe, terminal, web
from agentworld.domains._spec import DomainSpec
from agentworld.domains.effects import Effects


class Domain(StrEnum):
    mcp = "mcp"
    search = "search"
    terminal = "terminal"
    swe = "swe"
    web = "web"
    os = "os"
    android = "android"


_SPECS: dict[str, DomainSpec] = {
    m.SPEC.name: m.SPEC for m in (mcp, search, terminal, swe, web, os, android)
}
DOMAINS: tuple[str, ...] = tuple(d.value for d in Domain)


def get_domain(name: str) -> DomainSpec:
    """The spec of a domain; accepts AgentWorldBench task names such as ``x/terminal``."""
    key = domain_of_task(name)
    return _SPECS[key]


def domain_of_task(task: str) -> str:
    """Map a benchmark ``task`` (``terminal`` or ``group/terminal``) to its domain name."""
    key = task.rsplit("/", 1)[-1].strip().lower()
    if key not in _SPECS:
        raise ValueError(
            f"unknown domain {task!r}: expected one of {', '.join(DOMAINS)} "
            "(optionally prefixed, as in 'x/terminal')"
        )
    return key


def action_effects(domain: str, action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """What ``action`` did in ``domain`` given its observation (``""``: not known yet);
    GUI domains report nothing yet. ``env``: shell variables set before the action."""
    module = {"terminal": terminal, "mcp": mcp, "swe": swe, "search": search}.get(domain_of_task(domain))
    return module.effects(action, observation, env=env) if module else Effects()


__all__ = ["DOMAINS", "Domain", "DomainSpec", "Effects", "action_effects", "domain_of_task", "get_domain"]
