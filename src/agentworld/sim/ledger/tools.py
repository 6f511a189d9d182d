"""The ledger for tool-call domains (mcp, swe): files, created ids, rows, memory.

What a call did is read by the domain (:func:`agentworld.domains.toolcall.effects`: shell
tools as terminal commands, SQL arguments as statements); this applies it and checks
later results against it. SQL is applied and checked by :mod:`.sql`.
"""

from __future__ import annotations

import json

from agentworld.domains.toolcall import (
    CREATE,
    DELETE,
    GRAPH_READS,
    ID_KEYS,
    MEMORY,
    NOT_FOUND,
    PATH_KEYS,
    effects,
    first,
    reads_file,
    result_payload,
    shell_command,
)
from agentworld.sim.ledger import sql as sql_ledger
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState, parse_tool_call
from agentworld.sim.ledger.terminal import ShellLedger
from agentworld.sim.ledger.terminal import apply as apply_shell

__all__ = ["ToolLedger"]


class ToolLedger(LedgerRules):
    """Tool calls; shell tools are checked with the shell ledger."""

    def __init__(self) -> None:
        self._shell = ShellLedger()

    def update(self, state: LedgerState, action: str, observation: str) -> None:
        call = parse_tool_call(action)
        if call is not None and (cmd := shell_command(*call)) is not None:
            if not result_payload(observation)[1]:
                self._shell.update(state, cmd, observation)  # also reads the screen's prompt
            return
        found = effects(action, observation, env=state.env)
        apply_shell(state, found)  # files written or deleted
        for op in found.ops:
            if op.kind == "sql":
                sql_ledger.update(state, op.value)
            elif op.kind == "edit" and (p := state.abspath(op.target)) in state.files:
                if op.source and state.files[p].count(op.source) == 1:
                    state.files[p] = state.files[p].replace(op.source, op.value)
            elif op.kind == "remember":
                state.memory[op.target] = op.value
            elif op.kind == "forget":
                _forget(state, op.target)
            elif op.kind == "forget_id":
                state.ids.pop(op.target, None)
                if op.target not in state.deleted_ids:
                    state.deleted_ids.append(op.target)
            elif op.kind == "created":
                state.ids[op.target] = op.source
                state.rows.append({"tool": op.source, "arguments": json.loads(op.value), "id": op.target})

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        call = parse_tool_call(action)
        if call is None:
            return []
        name, args = call
        payload, is_error = result_payload(observation)
        if (cmd := shell_command(name, args)) is not None:
            return self._shell.check(state, cmd, observation)
        if statements := effects(action).sql():
            return [] if is_error else sql_ledger.check(state, statements[0], observation)
        text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        path = first(args, PATH_KEYS)
        found: list[Conflict] = []
        if isinstance(path, str) and reads_file(name, args):
            p = state.abspath(path)
            if p in state.files:
                if is_error or NOT_FOUND.search(text):
                    found.append(Conflict(kind="missing_file", key=p, expected="exists", detail="written earlier, reported missing"))
                else:
                    lost = [ln for ln in state.files[p].splitlines() if ln.strip() and ln.strip() not in observation and ln.strip() not in text]
                    if lost:
                        found.append(Conflict(kind="file_content", key=p, expected=state.files[p][:200], detail=f"{len(lost)} written line(s) absent"))
            elif p in state.deleted and not (is_error or NOT_FOUND.search(text)):
                found.append(Conflict(kind="deleted_path", key=p, expected="an error: no such file"))
        ident = first(args, ID_KEYS)
        if ident is not None and not CREATE.search(name) and not DELETE.search(name):
            if str(ident) in state.deleted_ids and not (is_error or NOT_FOUND.search(text)):
                found.append(Conflict(kind="deleted_id", key=str(ident), expected="an error: not found"))
            elif str(ident) in state.ids and (is_error and NOT_FOUND.search(text)):
                found.append(Conflict(kind="missing_id", key=str(ident), expected=f"exists (created by {state.ids[str(ident)]})"))
        if name in GRAPH_READS and not is_error:
            found += _check_graph(state, name, args, text)
        if MEMORY.search(name) and "key" in args and "value" not in args:
            key = str(args["key"])
            if key in state.memory and state.memory[key] not in text:
                found.append(Conflict(kind="memory", key=key, expected=state.memory[key]))
        return found


def _forget(state: LedgerState, key: str) -> None:
    """Drop a memory fact; an entity takes its observations and relations with it (the
    memory server deletes those too)."""
    state.memory.pop(key, None)
    if key.startswith("entity:"):
        name = key.removeprefix("entity:")
        state.memory = {k: v for k, v in state.memory.items()
                        if not k.startswith(f"observation:{name}:") and not (k.startswith("relation:") and name in k[9:].split("|")[::2])}


def _check_graph(state: LedgerState, name: str, args: dict, text: str) -> list[Conflict]:
    """A graph read shows every fact the session established about the entities it covers
    (``read_graph``: all; ``open_nodes``: those named)."""
    if name == "search_nodes":
        return []  # which nodes match a query is the server's choice
    names = None if name == "read_graph" else {str(n) for n in args.get("names") or []}
    found = []
    for key, value in state.memory.items():
        kind, _, rest = key.partition(":")
        owner = rest.split(":", 1)[0] if kind in ("entity", "observation") else None
        if kind not in ("entity", "observation") or (names is not None and owner not in names):
            continue
        shown = owner if kind == "entity" else value
        if json.dumps(shown, ensure_ascii=False)[1:-1] not in text:
            found.append(Conflict(kind="memory", key=key, expected=shown, detail=f"{name} leaves out a stored {kind}"))
    if name == "read_graph":
        for key, value in state.memory.items():
            if key.startswith("relation:") and not all(json.dumps(p)[1:-1] in text for p in key[9:].split("|")):
                found.append(Conflict(kind="memory", key=key, expected=value, detail="read_graph leaves out a stored relation"))
    return found
