"""Seeded perturbations: what to inject into a simulated episode, and when.

A :class:`PerturbationSpec` (YAML or Python) lists rules. Each rule names a kind, a
probability and/or explicit turns, optional tool/command filters and parameters. The
decision for (session seed, turn, rule) comes from a seeded hash, so a replay with the
same seed injects the same things whatever the order of sessions.

Two mechanisms: *semantic* injections become an extra simulation instruction for the
turn (the world model writes the failure in context, e.g. a permission error naming the
right file); *mechanical* ones rewrite the generated observation (an API error, a timeout
cut, a page of a paginated list). Every injection is returned as an :class:`Injection`
that the environment logs in ``info`` and in the recorded turn.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentworld.domains.presented import tool_call
from agentworld.domains.search import HIT
from agentworld.domains.terminal import typed_text
from agentworld.domains.terminal.screen import final_prompt_line, strip_final_prompt
from agentworld.seeding import unit_hash
from agentworld.sim.loading import read_model

Mode = Literal["semantic", "mechanical"]

# Semantic wording per kind; ``{target}`` is the tool or command the turn calls.
_INSTRUCTIONS: dict[str, str] = {
    "api_error": "This call fails with an intermittent server error (HTTP {status}, {message}); show the error as {target} reports it.",
    "timeout": "This call times out after {seconds} seconds; show the timeout error exactly as {target} reports it, with no result.",
    "rate_limit": "This call is rejected by a rate limit (HTTP 429, retry after {retry_after} s); show the error as {target} reports it.",
    "pagination": "Results are paginated: return only the first {page_size} items and a cursor/next-page token for the rest.",
    "partial_results": "Return incomplete intermediate results: only part of the data is ready; say that the rest is still being computed.",
    "partial_batch_failure": "This is a batch operation: about {failed_share} of the items fail with individual errors while the others succeed; report each item's outcome.",
    "permission_denied": "The operation is refused: permission denied for the resource it touches; show the exact permission error {target} would print.",
    "disk_full": "The disk is full: any write fails with 'No space left on device' (errno 28); show the failure as {target} would print it.",
    "stale_data": "The data source is stale: return values as they were {age} ago, without saying they are stale.",
    "custom": "{instruction}",
}
MECHANICAL_KINDS = ("api_error", "timeout", "rate_limit", "pagination", "partial_results")
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "api_error": {"status": 503, "message": "Service Unavailable"},
    "timeout": {"seconds": 30},
    "rate_limit": {"retry_after": 20},
    "pagination": {"page_size": 3},
    "partial_results": {"keep": 0.5},
    "partial_batch_failure": {"failed_share": "one third"},
    "permission_denied": {},
    "disk_full": {},
    "stale_data": {"age": "two weeks"},
    "custom": {"instruction": ""},
}


class Rule(BaseModel):
    """One kind of injection and when it fires."""

    # A misspelt key (``probablity:``) would silently disable the rule: it is an error.
    model_config = ConfigDict(extra="forbid")

    kind: Literal[
        "api_error", "timeout", "rate_limit", "pagination", "partial_results",
        "partial_batch_failure", "permission_denied", "disk_full", "stale_data", "custom",
    ]
    mode: Mode | None = None
    """Semantic (instruction) or mechanical (rewrite); default per kind."""
    probability: float = Field(0.0, ge=0.0, le=1.0)
    turns: list[int] = Field(default_factory=list)
    """1-based turns where the rule always fires (in addition to ``probability``)."""
    targets: list[str] = Field(default_factory=list)
    """Glob patterns over the tool name or command; empty means every action."""
    max_times: int | None = None
    """Stop after this many injections per session."""
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _mode_possible(self) -> Rule:
        if self.mode is None:
            self.mode = "mechanical" if self.kind in ("api_error", "timeout", "rate_limit") else "semantic"
        if self.mode == "mechanical" and self.kind not in MECHANICAL_KINDS:
            raise ValueError(f"{self.kind} has no mechanical form (mechanical kinds: {', '.join(MECHANICAL_KINDS)})")
        if self.kind == "custom" and not self.params.get("instruction"):
            raise ValueError("a custom rule needs params.instruction")
        return self

    def merged_params(self) -> dict[str, Any]:
        return {**DEFAULT_PARAMS[self.kind], **self.params}


class Injection(BaseModel):
    """One injection that happened: logged in step info and the recorded turn."""

    rule: int
    kind: str
    mode: Mode
    turn: int
    target: str
    detail: str


class PerturbationSpec(BaseModel):
    """A named, seeded set of rules."""

    model_config = ConfigDict(extra="forbid")

    name: str = "perturbations"
    seed: int = 0
    rules: list[Rule] = Field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path) -> PerturbationSpec:
        """Read a YAML (or JSON) spec; errors name the file."""
        return read_model(Path(path), cls, "perturbation spec")

    def plan(self, *, session_seed: int, turn: int, action: str, fired: dict[int, int]) -> list[Injection]:
        """The injections for one turn. ``fired`` counts earlier injections per rule (updated)."""
        target = action_target(action)
        out: list[Injection] = []
        for i, rule in enumerate(self.rules):
            if rule.max_times is not None and fired.get(i, 0) >= rule.max_times:
                continue
            if rule.targets and not any(fnmatch.fnmatch(target, pat) for pat in rule.targets):
                continue
            hit = turn in rule.turns or unit_hash(self.seed, session_seed, turn, i) < rule.probability
            if not hit:
                continue
            fired[i] = fired.get(i, 0) + 1
            params = {**rule.merged_params(), "target": target or "the environment"}
            detail = _INSTRUCTIONS[rule.kind].format(**params)
            out.append(Injection(rule=i, kind=rule.kind, mode=rule.mode or "semantic", turn=turn, target=target, detail=detail))
        return out


def action_target(action: str) -> str:
    """The tool name of a tool call, else the first word of the typed command (bare or
    presented actions alike)."""
    call = tool_call(action)
    if call is not None:
        return call[0]
    words = typed_text(action).split()
    return words[0] if words else ""


def apply_mechanical(domain: str, observation: str, injection: Injection, params: dict[str, Any]) -> str:
    """Rewrite a generated observation for a mechanical injection."""
    kind = injection.kind
    if kind in ("api_error", "timeout", "rate_limit"):
        if kind == "api_error":
            message = f"Error: HTTP {params['status']} {params['message']}"
        elif kind == "timeout":
            message = f"Error: request timed out after {params['seconds']} seconds"
        else:
            message = f"Error: HTTP 429 Too Many Requests (rate limit exceeded; retry after {params['retry_after']} s)"
        if domain == "terminal":
            # A hung command shows its partial output and no new prompt.
            if kind == "timeout":
                return strip_final_prompt(observation)
            return f"{strip_final_prompt(observation)}\n{injection.target}: {message[len('Error: '):]}\n{final_prompt_line(observation)}".strip("\n")
        if domain in ("mcp", "swe"):
            return json.dumps({"content": [{"type": "text", "text": message}], "isError": True})
        return message
    if kind == "pagination":
        return paginate(observation, int(params["page_size"]))
    if kind == "partial_results":
        keep = float(params["keep"])
        lines = observation.splitlines()
        cut = max(1, int(len(lines) * keep))
        return "\n".join(lines[:cut] + [f"[partial result: {len(lines) - cut} more line(s) still being computed]"])
    return observation


def paginate(observation: str, page_size: int) -> str:
    """First page of a list-like observation: JSON arrays, numbered search hits, or lines."""
    try:
        data = json.loads(observation)
    except (json.JSONDecodeError, TypeError):
        data = None
    if data is not None:
        paged, rest = _page_json(data, page_size)
        if rest:
            return json.dumps(paged, ensure_ascii=False)
        return observation
    hits = [m.start() for m in HIT.finditer(observation)]
    if len(hits) > page_size:
        return observation[: hits[page_size]].rstrip() + f"\n\n(page 1; {len(hits) - page_size} more result(s) on the next page)"
    lines = observation.splitlines()
    if len(lines) > page_size:
        return "\n".join(lines[:page_size] + [f"-- page 1, {len(lines) - page_size} more line(s): ask for the next page --"])
    return observation


def _page_json(data: Any, size: int) -> tuple[Any, int]:
    """Cut the first list found (top level, an MCP text block, or a dict value) to ``size``."""
    if isinstance(data, list) and len(data) > size:
        return data[:size], len(data) - size
    if isinstance(data, dict):
        if isinstance(data.get("content"), list):
            blocks = []
            rest = 0
            for block in data["content"]:
                if isinstance(block, dict) and block.get("type") == "text" and not rest:
                    try:
                        inner = json.loads(block["text"])
                    except (json.JSONDecodeError, TypeError, KeyError):
                        inner = None
                    if inner is not None:
                        paged, rest = _page_json(inner, size)
                        if rest:
                            block = {**block, "text": json.dumps(paged, ensure_ascii=False)}
                blocks.append(block)
            if rest:
                return {**data, "content": blocks}, rest
            if len(data["content"]) > size:
                return {**data, "content": data["content"][:size], "nextCursor": f"page-2-of-{len(data['content'])}"}, 1
            return data, 0
        for key, value in data.items():
            if isinstance(value, list) and len(value) > size:
                return {**data, key: value[:size], "next_cursor": f"cursor-{size}", "has_more": True}, len(value) - size
    return data, 0
