"""The end state MCP tasks are graded on: files, the memory graph, the git repository.

Real episodes read it from the live servers through their own tools (``read_text_file``,
``read_graph``, ``git_log``...), after the agent's last step and without recording.
Simulated episodes rebuild it by replaying, over the task's starting state, every call
the simulator answered without an error (``decided_by: replay``): the grade then says
what the agent achieved *if* the simulated results were right.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from agentworld.tool_calls import ToolCallError, parse_tool_call

WS = "/workspace"
FILES = f"{WS}/files"
REPO = f"{WS}/repo"


@dataclass
class EndState:
    files: dict[str, str | None] = field(default_factory=dict)
    """Absolute path -> content (None: absent)."""
    dirs: set[str] = field(default_factory=set)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Name -> {"entityType", "observations"}."""
    relations: set[tuple[str, str, str]] = field(default_factory=set)
    commits: list[str] = field(default_factory=list)
    """Commit messages, newest first."""
    branches: set[str] = field(default_factory=set)
    dirty: set[str] = field(default_factory=set)
    """Repository paths with uncommitted changes."""
    staged: set[str] = field(default_factory=set)


def _result(data: dict[str, Any]) -> tuple[Any, bool]:
    """(structured content or text, is_error) of a tool result the client received."""
    if "error" in data or data.get("isError"):
        return None, True
    if isinstance(data.get("structuredContent"), dict):
        sc = data["structuredContent"]
        return (sc["content"] if set(sc) == {"content"} else sc), False
    texts = [c.get("text", "") for c in data.get("content", []) if c.get("type") == "text"]
    return "\n".join(texts), False


def read_real(hub: Any, *, paths: list[str], dirs: list[str], graph: bool, git: bool) -> EndState:
    """The end state of a live episode, read through the servers' own tools."""
    st = EndState()
    for p in paths:
        content, err = _result(hub.call("read_text_file", {"path": p}))
        st.files[p] = None if err else str(content)
    for d in dirs:
        _, err = _result(hub.call("list_directory", {"path": d}))
        if not err:
            st.dirs.add(d)
    if graph:
        g, err = _result(hub.call("read_graph", {}))
        if not err:
            g = json.loads(g) if isinstance(g, str) else g
            for e in g.get("entities", []):
                st.entities[e["name"]] = {"entityType": e.get("entityType"), "observations": list(e.get("observations", []))}
            st.relations = {(r["from"], r["relationType"], r["to"]) for r in g.get("relations", [])}
    if git:
        log, _ = _result(hub.call("git_log", {"repo_path": REPO, "max_count": 20}))
        st.commits = re.findall(r"^Message: (.*)$", str(log or ""), re.M)
        br, _ = _result(hub.call("git_branch", {"repo_path": REPO, "branch_type": "local"}))
        st.branches = {b.strip("* ").strip() for b in str(br or "").splitlines() if b.strip()}
        status, _ = _result(hub.call("git_status", {"repo_path": REPO}))
        if "nothing to commit" not in str(status or ""):
            st.dirty.add("?")
    return st


def initial_state(options: dict[str, Any]) -> EndState:
    """The starting state a task's workspace options describe."""
    st = EndState(files={f"{FILES}/{p}": c for p, c in (options.get("files") or {}).items()})
    repo = options.get("repo")
    if repo:
        st.commits = [c["message"] for c in reversed(repo.get("commits", []))]
        st.branches = {"main"}
        st.dirty = set(repo.get("worktree") or {})
    for p in list(st.files):
        d = posixpath.dirname(p)
        while d.startswith(FILES):
            st.dirs.add(d)
            d = posixpath.dirname(d)
    return st


def _failed(observation: str) -> bool:
    try:
        data = json.loads(observation)
    except json.JSONDecodeError:
        return bool(re.match(r"\s*(error|mcp error|access denied|enoent)", observation, re.I))
    return not isinstance(data, dict) or _result(data)[1]


def replay(st: EndState, turns: list[tuple[str, str]]) -> EndState:
    """Apply every call that came back without an error (the simulated episode's effects)."""
    for action, observation in turns:
        try:
            name, args = parse_tool_call(action)
        except ToolCallError:
            continue
        if _failed(observation):
            continue
        _apply(st, name, args)
    return st


def _apply(st: EndState, name: str, a: dict[str, Any]) -> None:  # noqa: C901 - one branch per tool
    path = str(a.get("path", ""))
    if name == "write_file" and isinstance(a.get("content"), str):
        st.files[path] = a["content"]
    elif name == "edit_file" and isinstance(st.files.get(path), str):
        text = st.files[path] or ""
        for e in a.get("edits") or []:
            if isinstance(e, dict) and e.get("oldText", "") in text:
                text = text.replace(str(e["oldText"]), str(e.get("newText", "")), 1)
        st.files[path] = text
    elif name == "move_file":
        src, dst = str(a.get("source", "")), str(a.get("destination", ""))
        st.files[dst], st.files[src] = st.files.get(src), None
    elif name == "create_directory":
        st.dirs.add(path.rstrip("/"))
    elif name == "create_entities":
        for e in a.get("entities") or []:
            if isinstance(e, dict) and e.get("name") not in st.entities:
                st.entities[str(e.get("name"))] = {"entityType": e.get("entityType"),
                                                   "observations": list(e.get("observations") or [])}
    elif name == "add_observations":
        for o in a.get("observations") or []:
            if isinstance(o, dict) and o.get("entityName") in st.entities:
                st.entities[o["entityName"]]["observations"] += list(o.get("contents") or [])
    elif name == "create_relations":
        st.relations |= {(str(r.get("from")), str(r.get("relationType")), str(r.get("to")))
                         for r in a.get("relations") or [] if isinstance(r, dict)}
    elif name == "delete_entities":
        for n in a.get("entityNames") or []:
            st.entities.pop(n, None)
    elif name == "git_add":
        st.staged |= set(a.get("files") or [])
    elif name == "git_commit" and st.staged:
        st.commits.insert(0, str(a.get("message", "")))
        st.dirty = set() if st.staged & {".", REPO, REPO + "/"} else st.dirty - {p.removeprefix(REPO + "/") for p in st.staged}
        st.staged = set()
    elif name == "git_create_branch":
        st.branches.add(str(a.get("branch_name", "")))
