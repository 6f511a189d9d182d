"""The ledger for the search domain: the key-value memory and pages already extracted."""

from __future__ import annotations

import re

from agentworld.domains.search import effects
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState, parse_tool_call

_WORD = re.compile(r"\w+")


def _overlap(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / max(1, len(wa | wb))


class SearchLedger(LedgerRules):
    #: two extractions of one page must share at least this share of their words
    page_agreement: float = 0.5

    def update(self, state: LedgerState, action: str, observation: str) -> None:
        for op in effects(action, observation).ops:
            if op.kind == "remember":
                state.memory[op.target] = op.value
            elif op.kind == "forget":
                state.memory.pop(op.target, None)
            elif op.kind == "extract":
                state.pages.setdefault(op.target, op.value)

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        call = parse_tool_call(action)
        if call is None:
            return []
        name, args = call
        if name == "dict_memory" and args.get("op") == "get":
            key = str(args.get("key"))
            if key in state.memory and state.memory[key] not in observation:
                return [Conflict(kind="memory", key=key, expected=state.memory[key])]
        if (name == "web_extractor" and (url := args.get("url")) in state.pages
                and _overlap(state.pages[url], observation[:4000]) < self.page_agreement):
            return [Conflict(kind="page", key=url, expected=state.pages[url][:200], detail="differs from the earlier extraction")]
        return []
