"""Ledger rules for tool-call domains (mcp, swe): files, created ids, rows, memory.

SQL arguments (a database server's query tool) are read by :mod:`.sql`.

Tools are recognised by their names and argument names, not by a fixed catalogue, so the
rules work for any declared tool set: a tool whose name says write/create/edit with a path
and content writes a file; create/add/insert returns an id; delete/remove forgets one;
read/get/view of a known file or id must agree with what was written or deleted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld.sim.ledger import sql as sql_rules
from agentworld.sim.ledger.base import Conflict, DomainRules, LedgerState, parse_tool_call
from agentworld.sim.ledger.terminal import TerminalRules

_WRITE = re.compile(r"write|create_file|save|put_file|overwrite", re.I)
_READ = re.compile(r"read|view|get_file|cat|open", re.I)
_CREATE = re.compile(r"create|add|insert|new|post|open_issue|make", re.I)
_DELETE = re.compile(r"delete|remove|drop|destroy|archive", re.I)
_MEMORY = re.compile(r"memory|remember|store|note", re.I)
_NOT_FOUND = re.compile(r"not found|no such|does not exist|ENOENT|404|unknown id", re.I)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file")
_CONTENT_KEYS = ("content", "contents", "text", "file_text", "data", "body")
_ID_KEYS = ("id", "uid", "uuid", "key", "number", "issue_number", "record_id")
_SHELL = re.compile(r"^(bash|shell|sh|terminal|run_command|execute_command|exec)$", re.I)


def _shell_command(name: str, args: dict[str, Any]) -> str | None:
    """The command line of a shell tool call (``bash {"command": ...}``), else None."""
    cmd = args.get("command") or args.get("cmd")
    return cmd + "\n" if _SHELL.match(name) and isinstance(cmd, str) else None


def _first(args: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((args[k] for k in keys if k in args and args[k] not in (None, "")), None)


def result_payload(observation: str) -> tuple[Any, bool]:
    """The JSON of a tool result (MCP envelope unwrapped where possible) and its isError flag."""
    try:
        data = json.loads(observation)
    except (json.JSONDecodeError, TypeError):
        return observation, bool(re.match(r"\s*error", observation, re.I))
    if isinstance(data, dict) and "content" in data and isinstance(data["content"], list):
        is_error = bool(data.get("isError"))
        if "structuredContent" in data:
            return data["structuredContent"], is_error
        texts = [c.get("text", "") for c in data["content"] if isinstance(c, dict)]
        text = "\n".join(texts)
        try:
            return json.loads(text), is_error
        except json.JSONDecodeError:
            return text, is_error
    return data, False


def _ids_in(payload: Any) -> list[str]:
    if isinstance(payload, dict):
        return [str(payload[k]) for k in _ID_KEYS if k in payload and isinstance(payload[k], str | int)]
    if isinstance(payload, str):
        m = re.search(r"\b(?:id|ID|Id)[\s:=#]+[\"']?([\w-]+)", payload)
        return [m.group(1)] if m else []
    return []


class ToolRules(DomainRules):
    """Tool calls; shell tools are read with the terminal rules, file editors
    (``str_replace_editor``-style ``command`` = create/view/str_replace) as file access."""

    def __init__(self) -> None:
        self._shell = TerminalRules()

    def update(self, state: LedgerState, action: str, observation: str) -> None:
        call = parse_tool_call(action)
        if call is None:
            return
        name, args = call
        payload, is_error = result_payload(observation)
        if is_error:
            return
        if (cmd := _shell_command(name, args)) is not None:
            self._shell.update(state, cmd, observation)
            return
        if (sql := sql_rules.sql_of(args)) is not None:
            sql_rules.update(state, sql)
            return
        sub, path = args.get("command"), _first(args, _PATH_KEYS)
        if isinstance(path, str) and sub == "create" and isinstance(args.get("file_text"), str):
            state.write(path, args["file_text"])
            return
        if isinstance(path, str) and sub == "str_replace" and state.abspath(path) in state.files:
            p = state.abspath(path)
            old, new = str(args.get("old_str", "")), str(args.get("new_str", ""))
            if old and state.files[p].count(old) == 1:
                state.files[p] = state.files[p].replace(old, new)
            return
        path, content = _first(args, _PATH_KEYS), _first(args, _CONTENT_KEYS)
        if isinstance(path, str) and isinstance(content, str) and _WRITE.search(name):
            state.write(path, content)
        elif isinstance(path, str) and _DELETE.search(name):
            state.delete(path)
        elif _MEMORY.search(name) and "key" in args and "value" in args:
            state.memory[str(args["key"])] = str(args["value"])
        elif _DELETE.search(name) and (ident := _first(args, _ID_KEYS)) is not None:
            state.ids.pop(str(ident), None)
            if str(ident) not in state.deleted_ids:
                state.deleted_ids.append(str(ident))
        elif _CREATE.search(name):
            for ident in _ids_in(payload):
                state.ids[ident] = name
                state.rows.append({"tool": name, "arguments": args, "id": ident})

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        call = parse_tool_call(action)
        if call is None:
            return []
        name, args = call
        payload, is_error = result_payload(observation)
        if (cmd := _shell_command(name, args)) is not None:
            return self._shell.check(state, cmd, observation)
        if (sql := sql_rules.sql_of(args)) is not None:
            return [] if is_error else sql_rules.check(state, sql, observation)
        text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        path = _first(args, _PATH_KEYS)
        found: list[Conflict] = []
        reads = (_READ.search(name) and not _WRITE.search(name)) or args.get("command") == "view"
        if isinstance(path, str) and reads:
            p = state.abspath(path)
            if p in state.files:
                if is_error or _NOT_FOUND.search(text):
                    found.append(Conflict(kind="missing_file", key=p, expected="exists", detail="written earlier, reported missing"))
                else:
                    lost = [ln for ln in state.files[p].splitlines() if ln.strip() and ln.strip() not in observation and ln.strip() not in text]
                    if lost:
                        found.append(Conflict(kind="file_content", key=p, expected=state.files[p][:200], detail=f"{len(lost)} written line(s) absent"))
            elif p in state.deleted and not (is_error or _NOT_FOUND.search(text)):
                found.append(Conflict(kind="deleted_path", key=p, expected="an error: no such file"))
        ident = _first(args, _ID_KEYS)
        if ident is not None and not _CREATE.search(name) and not _DELETE.search(name):
            if str(ident) in state.deleted_ids and not (is_error or _NOT_FOUND.search(text)):
                found.append(Conflict(kind="deleted_id", key=str(ident), expected="an error: not found"))
            elif str(ident) in state.ids and (is_error and _NOT_FOUND.search(text)):
                found.append(Conflict(kind="missing_id", key=str(ident), expected=f"exists (created by {state.ids[str(ident)]})"))
        if _MEMORY.search(name) and "key" in args and "value" not in args:
            key = str(args["key"])
            if key in state.memory and state.memory[key] not in text:
                found.append(Conflict(kind="memory", key=key, expected=state.memory[key]))
        return found
