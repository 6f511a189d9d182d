"""Executable binary rule verifiers for RL rewards (SPEC section 5).

A verifier spec is data derived from a recorded trajectory at one turn: which strings a
faithful observation must contain, and why. :func:`derive_specs` finds the checks a
turn supports:

- ``controllability``: the trajectory has a simulation instruction and the real
  observation carries its marks (quoted text, ``Errno N``, HTTP status, exception names);
- ``error``: the real observation reports an error; its signature must be reproduced;
- ``write_read``: an earlier action wrote a file (shell redirection, heredoc, a
  write/edit/create tool call) and this action reads it: the written lines come back;
- ``env_command``: an earlier action exported a variable that this action uses;
- ``db_query``: an earlier action inserted rows into a table this action selects from
  (SQL), or an earlier create/add/update tool call stored records that this
  read/get/list/search call returns: the stored values come back.

Every spec passes on the real observation (derivation checks this), so a spec never
rewards a different answer than the recorded one. :func:`verify` runs a spec on a
predicted observation (whitespace-normalised substring checks); :func:`rule_reward`
turns a model's raw output into the rule part of the RL reward: 25 if every spec passes
on the parsed observation, else 0 (also 0 for a missing or truncated answer).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from agentworld.data.filters import ERROR_PATTERNS
from agentworld.parsing import Status, parse_prediction
from agentworld.tool_calls import read_tool_call
from agentworld.trajectory import Trajectory

RULE_REWARD_MAX = 25.0

KINDS = ("controllability", "error", "write_read", "env_command", "db_query")


class VerifierSpec(BaseModel):
    """One binary check: every ``must_contain`` string occurs in the observation, no
    ``must_not_contain`` string does, and the observation read as a JSON object has the
    ``json_fields`` values (top-level keys)."""

    kind: str
    must_contain: list[str] = Field(default_factory=list)
    must_not_contain: list[str] = Field(default_factory=list)
    json_fields: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def verify(spec: VerifierSpec, observation: str) -> bool:
    """Run one spec on an observation (whitespace-insensitive substring checks)."""
    obs = _norm(observation)
    if not all(_norm(s) in obs for s in spec.must_contain):
        return False
    if any(_norm(s) in obs for s in spec.must_not_contain if s):
        return False
    if spec.json_fields:
        value = _json_object(observation)
        return value is not None and all(value.get(k) == v for k, v in spec.json_fields.items())
    return True


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def verify_all(specs: list[VerifierSpec], observation: str | None) -> bool:
    return observation is not None and all(verify(s, observation) for s in specs)


def rule_reward(specs: list[VerifierSpec], raw_output: str) -> float:
    """25 when the parsed observation passes every spec, else 0 (a closed observation
    block is required, as for the rubric reward)."""
    parsed = parse_prediction(raw_output)
    return RULE_REWARD_MAX if parsed.status is Status.complete and verify_all(specs, parsed.observation) else 0.0


# -- derivation -------------------------------------------------------------------
_QUOTED = re.compile(r"[\"'`]([^\"'`\n]{3,120})[\"'`]")
_MARKS = re.compile(
    r"\b(errno \d+|error \d{3}|\d{3} (?:not found|forbidden|unauthorized|too many requests|internal server error)"
    r"|[A-Z]\w+(?:Error|Exception)|no space left on device|permission denied|timed? ?out|rate limit\w*)\b",
    re.IGNORECASE,
)
_REDIRECT = re.compile(r"(?:echo|printf)\s+(?P<q>['\"])(?P<body>.*?)(?P=q)\s*>>?\s*(?P<path>[\w./~-]+)", re.DOTALL)
_HEREDOC = re.compile(r"cat\s*>>?\s*(?P<path>[\w./~-]+)\s*<<-?\s*['\"]?(?P<tag>\w+)['\"]?\n(?P<body>.*?)\n(?P=tag)", re.DOTALL)
_READ = re.compile(r"\b(?:cat|head|tail|less|more|nl|grep\s+\S+)\s+(?P<path>[\w./~-]+)")
_EXPORT = re.compile(r"\bexport\s+(?P<name>[A-Za-z_]\w*)=(?P<q>['\"]?)(?P<value>[^'\"\s;&|]+|[^'\"]*?)(?P=q)(?=[\s;&|]|$)")
_INSERT = re.compile(r"insert\s+into\s+(?P<table>\w+)", re.IGNORECASE)
_VALUES = re.compile(r"values\s*\(", re.IGNORECASE)
# The first SELECT, then the first ``from <table>`` after it: two linear searches (one
# lazy pattern spanning both rescanned the text from every "select" in it).
_SELECT = re.compile(r"\bselect\b", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+(?P<table>\w+)", re.IGNORECASE)
_LITERAL = re.compile(r"'((?:[^']|'')*)'|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])")
_WRITE_TOOL = re.compile(r"create|add|insert|update|set|put|store|save|append", re.IGNORECASE)
_READ_TOOL = re.compile(r"read|get|list|search|query|find|open|fetch|select", re.IGNORECASE)
_PATH_KEYS = ("path", "file_path", "filename", "file")
_CONTENT_KEYS = ("content", "text", "new_str", "file_text", "contents")


#: the action text the derivations scan; their patterns are linear per match but some
#: restart at every occurrence of a keyword, so one huge action gets a bounded prefix
MAX_SCAN_CHARS = 1 << 16


def _action_text(action: str) -> str:
    """Shell text of an action (at most :data:`MAX_SCAN_CHARS`): terminal keystrokes joined,
    a tool call's command, else the JSON."""
    return _shell_text(action)[:MAX_SCAN_CHARS]


def _shell_text(action: str) -> str:
    try:
        value = json.loads(action)
    except json.JSONDecodeError:
        return action
    if isinstance(value, list) and all(isinstance(k, dict) and "keystrokes" in k for k in value):
        return "".join(str(k["keystrokes"]) for k in value)
    if call := read_tool_call(action):
        command = call[1].get("command") or call[1].get("cmd")
        if isinstance(command, str):
            return command
    return action


def _inserts(text: str) -> list[tuple[str, str]]:
    """``(table, "(rows...)")`` of each ``INSERT INTO t ... VALUES (...)`` in ``text``: the
    VALUES before the statement's next ``;``, the rows up to the first ``)``. The next
    VALUES, ``;`` and ``)`` are found once and reused while they lie ahead, so the scan is
    linear however many INSERTs the text repeats."""
    out: list[tuple[str, str]] = []
    values: re.Match[str] | None = None
    semi = close = -1
    pos = 0
    while head := _INSERT.search(text, pos):
        start = pos = head.end()
        if values is None or values.start() < start:
            values = _VALUES.search(text, start)
            if values is None:
                break
        if semi < start:
            semi = text.find(";", start) % (len(text) + 1)  # none: the end
        if values.start() >= semi:
            continue
        if close < values.end():
            close = text.find(")", values.end())
            if close < 0:
                break
        out.append((head.group("table"), text[values.end() - 1:close + 1]))
        pos = close + 1
    return out


def _writes(action: str) -> dict[str, str]:
    """Files an action writes: path -> content."""
    out: dict[str, str] = {}
    call = read_tool_call(action)
    if call and re.search(r"write|create|edit|save|put", call[0], re.IGNORECASE):
        path = next((call[1][k] for k in _PATH_KEYS if isinstance(call[1].get(k), str)), None)
        body = next((call[1][k] for k in _CONTENT_KEYS if isinstance(call[1].get(k), str)), None)
        if path and body:
            out[path] = body
    text = _action_text(action)
    for m in _REDIRECT.finditer(text):
        body = m.group("body").replace("\\n", "\n").replace("\\t", "\t")
        out[m.group("path")] = body
    for m in _HEREDOC.finditer(text):
        out[m.group("path")] = m.group("body")
    return out


def _reads(action: str) -> set[str]:
    call = read_tool_call(action)
    paths = set()
    if call and re.search(r"read|view|open|get|cat", call[0], re.IGNORECASE):
        paths |= {v for k in _PATH_KEYS if isinstance(v := call[1].get(k), str)}
    paths |= {m.group("path") for m in _READ.finditer(_action_text(action))}
    return paths


def _leaves(value: Any) -> list[str]:
    """String leaves of a tool call's arguments long enough to be evidence (>= 3 chars)."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value] if isinstance(value, str) and len(value.strip()) >= 3 else []


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _lines_in(body: str, truth: str) -> list[str]:
    lines = [ln.strip() for ln in body.splitlines() if len(ln.strip()) >= 1]
    return [ln for ln in lines if _norm(ln) in _norm(truth)]


def _spec(kind: str, must: list[str], truth: str, note: str) -> VerifierSpec | None:
    must = list(dict.fromkeys(m for m in must if m.strip()))
    if not must:
        return None
    spec = VerifierSpec(kind=kind, must_contain=must, note=note)
    return spec if verify(spec, truth) else None


def derive_specs(traj: Trajectory, turn_idx: int) -> list[VerifierSpec]:
    """The rule verifiers turn ``turn_idx`` (1-based) of ``traj`` supports (maybe none)."""
    turns = traj.turns[:turn_idx]
    action, truth = turns[-1].action, turns[-1].observation
    earlier = turns[:-1]
    specs: list[VerifierSpec | None] = []

    if traj.simulation_instruction:
        instr = traj.simulation_instruction
        marks = [m.group(1) for m in _QUOTED.finditer(instr)] + [m.group(1) for m in _MARKS.finditer(instr)]
        found = [m for m in marks if _norm(m).lower() in _norm(truth).lower()]
        # Match the case the real observation uses.
        cased = [_find_cased(m, truth) for m in found]
        specs.append(_spec("controllability", cased, truth, f"follows: {instr[:120]}"))

    specs.append(_error_spec(truth))

    reads = _reads(action)
    if reads:
        written: dict[str, str] = {}
        for t in earlier:
            written.update(_writes(t.action))
        for path in reads:
            body = written.get(path) or next((b for p, b in written.items() if _basename(p) == _basename(path)), None)
            if body:
                specs.append(_spec("write_read", _lines_in(body, truth), truth, f"reads back {path}"))

    shell = _action_text(action)
    for t in earlier:
        for m in _EXPORT.finditer(_action_text(t.action)):
            name, value = m.group("name"), m.group("value")
            if value and re.search(rf"\$\{{?{re.escape(name)}\b", shell):
                specs.append(_spec("env_command", [value], truth, f"${name} = {value}"))

    sel = (m := _SELECT.search(shell)) and _FROM.search(shell, m.end())
    if sel:
        table = sel.group("table").lower()
        literals: list[str] = []
        for t in earlier:
            for name, rows in _inserts(_action_text(t.action)):
                if name.lower() == table:
                    literals += [(a or b).replace("''", "'") for a, b in _LITERAL.findall(rows)]
        specs.append(_spec("db_query", [x for x in literals if x and x in truth], truth, f"rows inserted into {table}"))

    call = read_tool_call(action)
    if call and _READ_TOOL.search(call[0]):
        stored = [v for t in earlier if (c := read_tool_call(t.action)) and _WRITE_TOOL.search(c[0]) for v in _leaves(c[1])]
        specs.append(_spec("db_query", [v for v in stored if v in truth], truth, f"{call[0]} returns stored records"))

    return [s for s in specs if s is not None]


# What identifies an error independently of its wording around it, most specific first.
_SIGNATURES = (
    re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b"),
    re.compile(r"\[?errno \d+\]?", re.IGNORECASE),
    re.compile(
        r"no such file or directory|command not found|permission denied|not a directory|is a directory"
        r"|file exists|syntax error|connection refused|no space left on device|not found",
        re.IGNORECASE,
    ),
)


def _error_spec(truth: str) -> VerifierSpec | None:
    """Error reproduction: the real observation failed, the prediction must fail alike."""
    obj = _json_object(truth)
    if obj is not None and obj.get("isError") is True:
        spec = VerifierSpec(kind="error", json_fields={"isError": True}, note="the tool call fails")
        return spec if verify(spec, truth) else None
    if not any(p.search(truth) for p in ERROR_PATTERNS):
        return None
    found: list[str] = []
    for pat in _SIGNATURES:
        found += [m.group(0) for m in pat.finditer(truth)]
    return _spec("error", found[:3], truth, "reproduces the error")


def _find_cased(mark: str, truth: str) -> str:
    idx = truth.lower().find(mark.lower())
    return truth[idx : idx + len(mark)] if idx >= 0 else mark
