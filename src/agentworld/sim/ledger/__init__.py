"""Per-session state ledgers with one rule module per domain family."""

from __future__ import annotations

from agentworld.domains import domain_of_task
from agentworld.sim.ledger.base import Conflict, DomainRules, LedgerState, NoRules, parse_tool_call
from agentworld.sim.ledger.search import SearchRules
from agentworld.sim.ledger.terminal import TerminalRules
from agentworld.sim.ledger.tools import ToolRules


def rules_for(domain: str) -> DomainRules:
    """The ledger rules of a domain (GUI domains have none yet)."""
    d = domain_of_task(domain)
    if d == "terminal":
        return TerminalRules()
    if d in ("mcp", "swe"):
        return ToolRules()
    if d == "search":
        return SearchRules()
    return NoRules()


__all__ = ["Conflict", "DomainRules", "LedgerState", "NoRules", "parse_tool_call", "rules_for"]
