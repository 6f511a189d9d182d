"""Trajectory filters for every training stage (docs/design.md#training-pipeline), each one counted.

Per turn:
- an empty action (blank, ``{}``, ``[]``, ``null``) is removed: nothing was done, so
  the state chain reads the same without it;
- a GUI turn whose state did not change (same observation as the turn before, up to
  whitespace) is removed for the same reason;
- a retry cycle (garbage action -> "not understood" error -> retry of nearly the same
  action) keeps the garbage turn in the input but drops its loss
  (``metadata["skip_loss"]``); errors of well-formed actions (a missing file) stay.
Per trajectory (the first matching reason is counted):
- a GUI trajectory hit by an environment failure is dropped;
- an mcp/swe trajectory calling a tool it did not declare is dropped;
- fewer than 2 turns (after the turn filters) is dropped.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentworld.domains import get_domain
from agentworld.domains.errors import (  # noqa: F401  (re-exported: the filters' vocabulary)
    ENV_FAILURE_PATTERNS,
    ERROR_PATTERNS,
    REJECTED_PATTERNS,
    REJECTION_MAX_CHARS,
    is_error,
    is_rejected,
)
from agentworld.domains.presented import action_of
from agentworld.records.trajectory import Trajectory, Turn
from agentworld.tool_calls import call_name

SKIP_LOSS = "skip_loss"
"""Turn metadata key: set (to the reason) when a turn stays as context but leaves the loss."""

_EMPTY_ACTIONS = {"", "{}", "[]", "null", '""', "''", "none"}

def is_empty_action(action: str) -> bool:
    """Nothing done: blank or an empty JSON value, bare or in a presented user turn."""
    return action_of(action).strip().lower() in _EMPTY_ACTIONS


def env_failure(turn: Turn) -> str | None:
    """Why a GUI turn counts as an environment failure, or None. A recorder that knows the
    environment worked says so (``env_failure: false``, as web-v1 does): a Playwright timeout
    or a ``net::ERR_`` page is then the action's error (an unknown element, a blocked URL)."""
    if turn.metadata.get("env_failure") is False:
        return None
    flag = turn.metadata.get("env_failure") or turn.metadata.get("env_error")
    if flag:
        return str(flag)
    if not turn.observation.strip():
        return "empty observation"
    for p in ENV_FAILURE_PATTERNS:
        m = p.search(turn.observation)
        if m:
            return m.group(0)
    return None


def _normalise(text: str) -> str:
    return " ".join(text.split())


def declared_tools(tools: list[dict[str, Any]] | None) -> set[str]:
    """Tool names from MCP-style (``name``) or OpenAI-style (``function.name``) schemas."""
    names = set()
    for t in tools or []:
        name = t.get("name") or (t.get("function") or {}).get("name")
        if name:
            names.add(str(name))
    return names


def called_tools(action: str) -> list[str | None]:
    """Tool names an action (bare or presented) calls; None for a call whose name cannot be read."""
    try:
        value = json.loads(action_of(action))
    except json.JSONDecodeError:
        return [None]
    calls = value if isinstance(value, list) else [value]
    names: list[str | None] = []
    for c in calls:
        if not isinstance(c, dict):
            names.append(None)
            continue
        names.append(call_name(c))
    return names


def is_retry(garbage: str, retry: str, *, similarity: float = 0.6) -> bool:
    """Whether ``retry`` redoes ``garbage``: nearly the same text and, for tool calls,
    the same tools (calls share so much JSON that text alone would pair any two)."""
    garbage, retry = action_of(garbage), action_of(retry)  # the frames' words are no part of it
    if garbage == retry:
        return True
    tools_a, tools_b = called_tools(garbage), called_tools(retry)
    if None not in tools_a and None not in tools_b and tools_a != tools_b:
        return False
    return difflib.SequenceMatcher(None, garbage, retry, autojunk=False).ratio() >= similarity


@dataclass(frozen=True)
class FilterConfig:
    """Switches and thresholds of the filters (all on by default)."""

    min_turns: int = 2
    drop_empty_actions: bool = True
    drop_no_change_gui_turns: bool = True
    drop_gui_env_failures: bool = True
    drop_undeclared_tools: bool = True
    skip_retry_cycles: bool = True
    retry_similarity: float = 0.6


@dataclass
class FilterReport:
    """Counts per domain: trajectories in/kept/dropped by reason, turns removed or loss-skipped."""

    counts: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, domain: str, key: str, n: int = 1) -> None:
        self.counts[domain][key] += n

    def total(self, key: str) -> int:
        return sum(c[key] for c in self.counts.values())

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {d: dict(c) for d, c in sorted(self.counts.items())}


def filter_trajectory(
    traj: Trajectory, config: FilterConfig, report: FilterReport
) -> Trajectory | None:
    """The filtered copy of ``traj`` (turns removed or marked), or None when it is dropped."""
    spec = get_domain(traj.domain)
    d = traj.domain
    report.add(d, "trajectories_in")
    report.add(d, "turns_in", len(traj.turns))
    kept: list[Turn] = []
    for turn in traj.turns:
        if config.drop_empty_actions and is_empty_action(turn.action):
            report.add(d, "turns_removed_empty_action")
            continue
        if (
            config.drop_no_change_gui_turns
            and spec.gui
            and kept
            and _normalise(kept[-1].observation) == _normalise(turn.observation)
        ):
            report.add(d, "turns_removed_no_change")
            continue
        kept.append(turn.model_copy(deep=True))

    reason = _drop_reason(traj, kept, config, spec.gui, spec.tools_define_actions)
    if reason:
        report.add(d, f"dropped_{reason}")
        return None

    if config.skip_retry_cycles:
        for prev, nxt in itertools.pairwise(kept):
            if is_rejected(prev.observation) and is_retry(prev.action, nxt.action, similarity=config.retry_similarity):
                prev.metadata[SKIP_LOSS] = "retry_cycle"
                report.add(d, "turns_loss_skipped_retry")
    report.add(d, "trajectories_kept")
    report.add(d, "turns_kept", len(kept))
    return traj.model_copy(update={"turns": kept})


def _drop_reason(traj: Trajectory, kept: list[Turn], config: FilterConfig, gui: bool, tools: bool) -> str | None:
    if config.drop_gui_env_failures and gui and any(env_failure(t) for t in kept):
        return "env_failure"
    if config.drop_undeclared_tools and tools:
        declared = declared_tools(traj.tools)
        if any(name not in declared for t in kept for name in called_tools(t.action)):
            return "undeclared_tool"
    if len(kept) < config.min_turns:
        return "too_few_turns"
    return None


def filter_trajectories(
    trajectories: Iterable[Trajectory], config: FilterConfig | None = None, report: FilterReport | None = None
) -> Iterator[Trajectory]:
    """Filtered trajectories; counts go into ``report`` (pass one in to read them)."""
    config = config or FilterConfig()
    report = report if report is not None else FilterReport()
    for traj in trajectories:
        out = filter_trajectory(traj, config, report)
        if out is not None:
            yield out


def loss_skipped(turn: Turn) -> bool:
    return bool(turn.metadata.get(SKIP_LOSS))
