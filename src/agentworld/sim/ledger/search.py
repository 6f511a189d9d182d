"""Ledger rules for the search domain: the key-value memory and pages already extracted."""

from __future__ import annotations

import re

from agentworld.sim.ledger.base import Conflict, DomainRules, LedgerState, parse_tool_call

_WORD = re.compile(r"\w+")


def _overlap(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / max(1, len(wa | wb))


class SearchRules(DomainRules):
    #: two extractions of one page must share at least this share of their words
    page_agreement: float = 0.5

    def update(self, state: LedgerState, action: str, observation: str) -> None:
        call = parse_tool_call(action)
        if call is None:
            return
        name, args = call
        if name == "dict_memory":
            op, key = args.get("op"), args.get("key")
            if op in ("add", "update") and key is not None:
                state.memory[str(key)] = str(args.get("value", ""))
            elif op == "remove" and key is not None:
                state.memory.pop(str(key), None)
        elif name == "web_extractor" and isinstance(args.get("url"), str):
            state.pages.setdefault(args["url"], observation[:4000])

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        call = parse_tool_call(action)
        if call is None:
            return []
        name, args = call
        if name == "dict_memory" and args.get("op") == "get":
            key = str(args.get("key"))
            if key in state.memory and state.memory[key] not in observation:
                return [Conflict(kind="memory", key=key, expected=state.memory[key])]
        if name == "web_extractor" and (url := args.get("url")) in state.pages:
            if _overlap(state.pages[url], observation[:4000]) < self.page_agreement:
                return [Conflict(kind="page", key=url, expected=state.pages[url][:200], detail="differs from the earlier extraction")]
        return []
