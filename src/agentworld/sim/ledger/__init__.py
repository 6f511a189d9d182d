"""Per-session state ledgers, one per domain family; what an action did is read by the
domain's extractor (``agentworld.domains.<domain>.effects``), the ledger applies it."""

from __future__ import annotations

from agentworld.domains import domain_of_task
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState, NoLedger, parse_tool_call
from agentworld.sim.ledger.os import DesktopLedger
from agentworld.sim.ledger.search import SearchLedger
from agentworld.sim.ledger.terminal import ShellLedger
from agentworld.sim.ledger.tools import ToolLedger
from agentworld.sim.ledger.web import WebLedger


def ledger_for(domain: str) -> LedgerRules:
    """The ledger rules of a domain (android has none yet)."""
    d = domain_of_task(domain)
    if d == "terminal":
        return ShellLedger()
    if d in ("mcp", "swe"):
        return ToolLedger()
    if d == "search":
        return SearchLedger()
    if d == "os":
        return DesktopLedger()
    if d == "web":
        return WebLedger()
    return NoLedger()


__all__ = ["Conflict", "LedgerRules", "LedgerState", "NoLedger", "ledger_for", "parse_tool_call"]
