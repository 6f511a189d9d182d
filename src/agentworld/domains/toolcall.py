"""Tool calls (the mcp and swe domains): how a call and its result are read, and what a
call did.

Tools are recognised by their names and argument names, not by a fixed catalogue, so this
works for any declared tool set: a tool whose name says write/create/edit with a path and
content writes a file; create/add/insert returns an id; delete/remove forgets one;
read/get/view reads a file or a record. The knowledge-graph memory server's calls
(``create_entities``, ``add_observations``, ``create_relations``, ``delete_*``) remember
and forget its facts one by one. Shell tools (``bash {"command": ...}``) are read
as terminal commands, file editors (``str_replace_editor``-style ``command`` =
create/view/str_replace) as file access, SQL arguments as statements.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentworld.domains import sql
from agentworld.domains.effects import Effect, Effects
from agentworld.domains.presented import tool_call
from agentworld.domains.terminal import effects as terminal_effects

WRITE = re.compile(r"write|create_file|save|put_file|overwrite", re.I)
READ = re.compile(r"read|view|get_file|cat|open", re.I)
CREATE = re.compile(r"create|add|insert|new|post|open_issue|make", re.I)
DELETE = re.compile(r"delete|remove|drop|destroy|archive", re.I)
MEMORY = re.compile(r"memory|remember|store|note", re.I)
# Looser: calls that store records (any write-like verb) and calls that read them back.
STORES = re.compile(r"create|add|insert|update|set|put|store|save|append", re.IGNORECASE)
QUERIES = re.compile(r"read|get|list|search|query|find|open|fetch|select", re.IGNORECASE)
NOT_FOUND = re.compile(r"not found|no such|does not exist|ENOENT|404|unknown id", re.I)
"""A result saying that the file or record asked for does not exist."""
PATH_KEYS = ("path", "file_path", "filepath", "filename", "file")
CONTENT_KEYS = ("content", "contents", "text", "file_text", "data", "body")
ID_KEYS = ("id", "uid", "uuid", "key", "number", "issue_number", "record_id")
_SHELL = re.compile(r"^(bash|shell|sh|terminal|run_command|execute_command|exec)$", re.I)


def shell_command(name: str, args: dict[str, Any]) -> str | None:
    """The command line of a shell tool call (``bash {"command": ...}``), else None."""
    cmd = args.get("command") or args.get("cmd")
    return cmd + "\n" if _SHELL.match(name) and isinstance(cmd, str) else None


def first(args: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first of ``keys`` that ``args`` sets to something non-empty."""
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


def ids_in(payload: Any) -> list[str]:
    """Ids a tool result names (``id``-like keys of an object, ``id: x`` in text)."""
    if isinstance(payload, dict):
        return [str(payload[k]) for k in ID_KEYS if k in payload and isinstance(payload[k], str | int)]
    if isinstance(payload, str):
        m = re.search(r"\b(?:id|ID|Id)[\s:=#]+[\"']?([\w-]+)", payload)
        return [m.group(1)] if m else []
    return []


def reads_file(name: str, args: dict[str, Any]) -> bool:
    """Whether the call reads the file its path argument names."""
    return bool((READ.search(name) and not WRITE.search(name)) or args.get("command") == "view")


# -- the knowledge-graph memory server (``create_entities``, ``add_observations``...) -----
# Its graph is kept as memory keys, one fact a key, so that adding or deleting one fact
# never needs the ones before it: ``entity:<name>`` -> its type, ``observation:<name>:<text>``
# -> the text, ``relation:<from>|<type>|<to>`` -> "<from> <type> <to>".
GRAPH_TOOLS = frozenset({"create_entities", "add_observations", "create_relations", "delete_entities",
                         "delete_observations", "delete_relations"})
GRAPH_READS = frozenset({"read_graph", "open_nodes", "search_nodes"})


def entity_key(name: str) -> str:
    return f"entity:{name}"


def observation_key(name: str, text: str) -> str:
    return f"observation:{name}:{text}"


def relation_key(rel: Mapping[str, Any]) -> str:
    return f"relation:{rel.get('from')}|{rel.get('relationType')}|{rel.get('to')}"


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def graph_effects(name: str, args: dict[str, Any], payload: Any) -> list[Effect]:
    """What a memory-graph call did, as ``remember``/``forget`` of its facts. Creating an
    entity that exists, or an observation already there, changes nothing on the server;
    so where the result lists what was created or added, only that is remembered."""
    created = payload.get("entities", payload.get("relations", payload.get("results"))) if isinstance(payload, dict) else payload
    if name == "create_entities":
        entities = _dicts(created) or _dicts(args.get("entities"))
        return [op for e in entities for op in [
            Effect("remember", entity_key(str(e.get("name"))), str(e.get("entityType", ""))),
            *[Effect("remember", observation_key(str(e.get("name")), str(o)), str(o)) for o in e.get("observations") or []],
        ]]
    if name == "add_observations":
        added = _dicts(created) or _dicts(args.get("observations"))
        return [Effect("remember", observation_key(str(a.get("entityName")), str(o)), str(o))
                for a in added for o in a.get("addedObservations", a.get("contents")) or []]
    if name == "create_relations":
        return [Effect("remember", relation_key(r), f"{r.get('from')} {r.get('relationType')} {r.get('to')}")
                for r in _dicts(created) or _dicts(args.get("relations"))]
    if name == "delete_entities":
        return [Effect("forget", entity_key(str(n))) for n in args.get("entityNames") or []]
    if name == "delete_observations":
        return [Effect("forget", observation_key(str(d.get("entityName")), str(o)))
                for d in _dicts(args.get("deletions")) for o in d.get("observations") or []]
    return [Effect("forget", relation_key(r)) for r in _dicts(args.get("relations"))]


def effects(action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """The effects of one tool call given its result (``""``: not known yet); a failed
    call (``isError``) has none. ``env`` expands variables in shell tools' commands."""
    call = tool_call(action)
    if call is None:
        return Effects()
    name, args = call
    payload, is_error = result_payload(observation)
    if is_error:
        return Effects(failed=True)
    if (cmd := shell_command(name, args)) is not None or name in GRAPH_TOOLS:
        # A shell tool is read as a terminal command; the memory graph's calls as its facts.
        return terminal_effects(cmd, observation, env=env) if cmd is not None else Effects(graph_effects(name, args, payload))
    ops: list[Effect] = []
    if STORES.search(name):
        ops.append(Effect("store", name, json.dumps(args, ensure_ascii=False)))
    if QUERIES.search(name):
        ops.append(Effect("query", name))
    path = first(args, PATH_KEYS)
    if isinstance(path, str) and reads_file(name, args):
        ops.append(Effect("read", path))
    if (statement := sql.sql_of(args)) is not None:
        return Effects([*ops, Effect("sql", value=statement)])
    sub = args.get("command")
    if isinstance(path, str) and sub == "create" and isinstance(args.get("file_text"), str):
        return Effects([*ops, Effect("write", path, args["file_text"])])
    if isinstance(path, str) and sub == "str_replace":
        return Effects([*ops, Effect("edit", path, str(args.get("new_str", "")), source=str(args.get("old_str", "")))])
    content = first(args, CONTENT_KEYS)
    if isinstance(path, str) and isinstance(content, str) and WRITE.search(name):
        ops.append(Effect("write", path, content))
    elif isinstance(path, str) and DELETE.search(name):
        ops.append(Effect("delete", path))
    elif MEMORY.search(name) and "key" in args and "value" in args:
        ops.append(Effect("remember", str(args["key"]), str(args["value"])))
    elif DELETE.search(name) and (ident := first(args, ID_KEYS)) is not None:
        ops.append(Effect("forget_id", str(ident)))
    elif CREATE.search(name):
        ops += [Effect("created", ident, json.dumps(args, ensure_ascii=False), source=name) for ident in ids_in(payload)]
    return Effects(ops)
