"""The evaluation protocol behind a score, as every report states it.

Published numbers move with the protocol (one model's score went from 44 to 57 once the
history was included; the published script prints a micro average, the paper a macro
one), so a score is never shown without: how the world model's messages were built, its
and the judge's sampling settings, which judge request and prompts (by digest) made the
verdicts, and how verdicts were aggregated. Everything here is read from the verdict
records themselves, which carry the judge's and the world model's run settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from agentworld.judge.prompt import AGENTWORLD_HISTORY_TURNS, AGENTWORLD_MAX_CHARS, JUDGE_PROMPT_VERSION
from agentworld.records.verdict import JudgedRecord

MESSAGES = (
    "as the published script builds them: system_str as the system message when non-empty; every earlier "
    "turn's prompt and stored response verbatim as user/assistant pairs; prompt[turn_idx - 1] last"
)
AGGREGATION = (
    "a sample's total is the mean of its valid (1-5) dimension scores; each domain and dimension is "
    "(mean - 1) / 4 * 100 over its judged samples with a valid verdict; micro overall = the same over all "
    "those samples (what the published script's `score` prints); macro overall = the mean of the domain "
    "scores (the paper's tables). Left out of every mean and counted apart: failed calls and predictions "
    "with no answer (the published script skips empty generations). Truncated answers are judged as cut. "
    "Judge failures are counted, not averaged"
)
_SETTINGS_NOT_RECORDED = "not recorded (verdicts written before the predictions' run settings were kept)"


class Protocol(BaseModel):
    """How one (world model, judge) pair's numbers were made."""

    messages: str
    """How the world model's chat messages were built."""
    world_model_settings: list[dict[str, Any]] = Field(default_factory=list)
    """The distinct run settings of the predictions (backend, model, sampling, demonstrations);
    more than one means the scores mix runs."""
    judge: str
    judge_request: str
    """Which judge request made the verdicts: published, ours, or the rule scorer."""
    judge_settings: list[dict[str, Any]] = Field(default_factory=list)
    """The distinct settings the judge recorded (model, sampling, prompt version)."""
    judge_prompts: list[str] = Field(default_factory=list)
    """The prompt versions: ours (``aw-judge-N``) or digests of the user's prompt files."""
    aggregation: str = AGGREGATION


def _distinct(items: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item is not None and item not in out:
            out.append(item)
    return out


def _messages(settings: list[dict[str, Any]]) -> str:
    if not settings:
        return f"{MESSAGES} (the bench infer construction; {_SETTINGS_NOT_RECORDED})"
    demos = sorted({f"{s['demos']} demonstrations from {s.get('demo_source', '?')}" for s in settings if s.get("demos")})
    if demos:
        return f"{MESSAGES}, plus {'; '.join(demos)} put into the context (not the published construction)"
    return MESSAGES


def judge_request(judge: str, versions: list[str]) -> str:
    """A judge request in words, from the prompt versions its verdicts recorded."""
    if judge == "rules":
        return "the offline rule scorer (deterministic; no model, no request)"
    if versions and all(v.startswith("published:") for v in versions):
        return ("published: the domain's system prompt and the published user template, both from the user's "
                "files; the whole history (stored responses, markers kept), the action, the prediction and the "
                "ground truth (markers stripped); the same request on every attempt")
    ours = (f"agentworld: simulation context (system_str), the last {AGENTWORLD_HISTORY_TURNS} turns, fields "
            f"clipped to {AGENTWORLD_MAX_CHARS} characters, our scoring instructions; retries with another seed, warmer")
    if versions and all(v.startswith("files:") for v in versions):
        return f"{ours}; system prompts from the user's published files"
    if versions and all(v == JUDGE_PROMPT_VERSION for v in versions):
        return f"{ours}; our rubric ({JUDGE_PROMPT_VERSION})"
    return f"{ours}; prompt versions mixed or not recorded"


def protocol_of(judge: str, records: list[JudgedRecord]) -> Protocol:
    """The protocol of one (world model, judge) pair's verdicts."""
    model_settings = _distinct(r.prediction_settings for r in records)
    judge_settings = _distinct(r.judge_settings for r in records)
    versions = sorted({str(s["prompt_version"]) for s in judge_settings if "prompt_version" in s})
    return Protocol(
        messages=_messages(model_settings),
        world_model_settings=model_settings,
        judge=judge,
        judge_request=judge_request(judge, versions),
        judge_settings=judge_settings,
        judge_prompts=versions,
    )


def sampling_line(settings: list[dict[str, Any]]) -> str:
    """Settings in one line for reports: ``temperature=0.6 max_tokens=32768`` (runs apart by ``|``)."""
    if not settings:
        return _SETTINGS_NOT_RECORDED
    shown = [" ".join(f"{k}={v}" for k, v in s.items() if k not in ("backend", "model", "prompt_version")) or "server defaults"
             for s in settings]
    return " | ".join(shown)
