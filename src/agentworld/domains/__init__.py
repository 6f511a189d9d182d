"""The seven domains one world model covers, and their registry.

Each domain has one module here (``agentworld.domains.terminal`` ...) holding its
prompt wording, action format and observation format.
"""

from __future__ import annotations

from enum import StrEnum

from agentworld.domains import android, mcp, os, search, swe, terminal, web
from agentworld.domains._spec import DomainSpec


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


__all__ = ["DOMAINS", "Domain", "DomainSpec", "domain_of_task", "get_domain"]
