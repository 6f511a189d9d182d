"""Agent tasks with verifiable rewards, one module per domain (terminal, mcp, search).

``family(name).instance(seed, TaskContext(world=...))`` gives one task; :func:`tasks`
expands family names (or domains) and seeds into a list.
"""

from __future__ import annotations

from agentworld.agents.tasks.base import (
    AgentTask,
    CheckResult,
    Family,
    Grade,
    JudgeFn,
    TaskContext,
)
from agentworld.agents.tasks.mcp import FAMILIES as MCP_FAMILIES
from agentworld.agents.tasks.search import FAMILIES as SEARCH_FAMILIES
from agentworld.agents.tasks.terminal import FAMILIES as TERMINAL_FAMILIES

_REGISTRIES = {"terminal": TERMINAL_FAMILIES, "mcp": MCP_FAMILIES, "search": SEARCH_FAMILIES}
DOMAINS = tuple(_REGISTRIES)


def family_names(domain: str | None = None) -> list[str]:
    return sorted(n for d, reg in _REGISTRIES.items() if domain in (None, d) for n in reg.names())


def family(name: str) -> Family:
    for reg in _REGISTRIES.values():
        if name in reg.names():
            return reg.get(name)
    raise KeyError(f"unknown task family {name!r} (known: {', '.join(family_names())})")


def expand(selectors: list[str]) -> list[str]:
    """Family names from names and domain names (``terminal`` means all terminal families)."""
    out: list[str] = []
    for s in selectors:
        names = family_names(s) if s in _REGISTRIES else [family(s).name]
        out += [n for n in names if n not in out]
    return out


def tasks(selectors: list[str], seeds: list[int], context: TaskContext | None = None) -> list[AgentTask]:
    """One task per (family, seed), families in the order given."""
    return [family(name).instance(seed, context) for name in expand(selectors) for seed in seeds]


__all__ = ["DOMAINS", "AgentTask", "CheckResult", "Family", "Grade", "JudgeFn", "TaskContext", "expand", "family",
           "family_names", "tasks"]
