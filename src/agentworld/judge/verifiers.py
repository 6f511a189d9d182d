"""Executable binary rule verifiers for RL rewards (docs/design.md#training-pipeline).

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
on the parsed observation, else 0 (also 0 for a missing or truncated answer); a turn
with no spec gets the offline rule scorer's share instead of a free 25.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from agentworld.domains import action_effects, sql
from agentworld.domains.errors import ERROR_PATTERNS, ERROR_SIGNATURES
from agentworld.domains.terminal import typed_text
from agentworld.judge.rules import score_total
from agentworld.parsing import Status, parse_prediction
from agentworld.records.bench import BenchSample
from agentworld.records.trajectory import Trajectory

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


def rule_reward(specs: list[VerifierSpec], raw_output: str, sample: BenchSample | None = None) -> float:
    """The rule part of the RL reward, 0-25; a closed observation block is required, as
    for the rubric reward.

    With specs: 25 when the parsed observation passes every one, else 0. A turn with no
    spec has nothing executable to check, so passing "all" of none earns nothing by
    itself: given the ``sample``, the share is the offline rule scorer's
    (``(mean - 1) / 4 * 25``, deterministic, compared against the recorded observation),
    without it 0.
    """
    parsed = parse_prediction(raw_output)
    if parsed.status is not Status.complete or parsed.observation is None:
        return 0.0
    if specs:
        return RULE_REWARD_MAX if verify_all(specs, parsed.observation) else 0.0
    if sample is None:
        return 0.0
    return (score_total(sample, parsed.observation) - 1) / 4 * RULE_REWARD_MAX


# -- derivation -------------------------------------------------------------------
_QUOTED = re.compile(r"[\"'`]([^\"'`\n]{3,120})[\"'`]")
_MARKS = re.compile(
    r"\b(errno \d+|error \d{3}|\d{3} (?:not found|forbidden|unauthorized|too many requests|internal server error)"
    r"|[A-Z]\w+(?:Error|Exception)|no space left on device|permission denied|timed? ?out|rate limit\w*)\b",
    re.IGNORECASE,
)


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

    # What each action did, by the domain's own extractor, read from the action alone (a
    # write counts whatever its screen said: the recorded observation is checked below).
    now = action_effects(traj.domain, action)
    before = [action_effects(traj.domain, t.action) for t in earlier]
    if reads := now.reads():
        written: dict[str, str] = {}
        for eff in before:
            written = eff.written(written)
        for path in reads:
            body = written.get(path) or next((b for p, b in written.items() if _basename(p) == _basename(path)), None)
            if body:
                specs.append(_spec("write_read", _lines_in(body, truth), truth, f"reads back {path}"))

    used = typed_text(action)
    for eff in before:
        for name, value in eff.env().items():
            if value and re.search(rf"\$\{{?{re.escape(name)}\b", used):
                specs.append(_spec("env_command", [value], truth, f"${name} = {value}"))

    if table := next((t for q in now.sql() if (t := sql.queried_table(q))), None):
        literals = [x for eff in before for q in eff.sql() for name, xs in sql.inserted_literals(q) if name.lower() == table for x in xs]
        specs.append(_spec("db_query", [x for x in literals if x and x in truth], truth, f"rows inserted into {table}"))

    if query := now.of("query"):
        stored = [v for eff in before for op in eff.of("store") for v in _leaves(json.loads(op.value))]
        specs.append(_spec("db_query", [v for v in stored if v in truth], truth, f"{query[0].target} returns stored records"))

    return [s for s in specs if s is not None]


def _error_spec(truth: str) -> VerifierSpec | None:
    """Error reproduction: the real observation failed, the prediction must fail alike."""
    obj = _json_object(truth)
    if obj is not None and obj.get("isError") is True:
        spec = VerifierSpec(kind="error", json_fields={"isError": True}, note="the tool call fails")
        return spec if verify(spec, truth) else None
    if not any(p.search(truth) for p in ERROR_PATTERNS):
        return None
    found: list[str] = []
    for pat in ERROR_SIGNATURES:
        found += [m.group(0) for m in pat.finditer(truth)]
    return _spec("error", found[:3], truth, "reproduces the error")


def _find_cased(mark: str, truth: str) -> str:
    idx = truth.lower().find(mark.lower())
    return truth[idx : idx + len(mark)] if idx >= 0 else mark
