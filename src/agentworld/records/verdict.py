"""A judge's verdict, and the stored line of a verdicts file.

A :class:`Judgement` holds integer scores 1-5 for the five judged dimensions
(docs/design.md#benchmark-records-and-scoring); 0 marks a dimension the judge did not
score validly. A sample's total is the mean of its valid (>0) dimensions; a judgement
with no valid dimension, or whose judge failed, is not ``ok`` and is counted as a
failure when scoring, never dropped.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from agentworld.records.prediction import SCHEMA_VERSION

DIMENSIONS: tuple[str, ...] = ("format", "factuality", "consistency", "realism", "quality")
"""The five judged dimensions, in the order reports list them."""

SCORE_MIN, SCORE_MAX = 1, 5


def clamp_score(value: Any) -> int:
    """A judge's raw score as an integer 1-5, or 0 when it is not a valid score.

    Integral floats (``4.0``) and numeric strings (``"4"``) are accepted; anything else,
    including booleans and out-of-range numbers, is invalid (0) rather than guessed.
    """
    if isinstance(value, bool):
        return 0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return 0
    if isinstance(value, float):
        if not value.is_integer():
            return 0
        value = int(value)
    if isinstance(value, int) and SCORE_MIN <= value <= SCORE_MAX:
        return value
    return 0


def sample_total(scores: dict[str, int]) -> float | None:
    """Mean of the valid (>0) dimension scores; None when no dimension is valid."""
    valid = [scores.get(d, 0) for d in DIMENSIONS if scores.get(d, 0) > 0]
    return sum(valid) / len(valid) if valid else None


class Judgement(BaseModel):
    """One judge's verdict on one prediction."""

    judge: str
    """Name of the judge: ``rules`` or ``<backend>:<model>``."""
    scores: dict[str, int] = Field(default_factory=lambda: {d: 0 for d in DIMENSIONS})
    total: float | None = None
    """Mean of the valid dimension scores (filled in from ``scores`` when not given)."""
    ok: bool = False
    """True when the judge produced at least one valid score and did not fail."""
    error: str | None = None
    """Why the judgement failed (unparsable output after retries, endpoint down...)."""
    strengths: str = ""
    weaknesses: str = ""
    content_type: str | None = None
    """The judge's classification: deterministic, pre-existing, runtime or mixed."""
    raw: str = ""
    """The judge's raw output (empty for the rule scorer)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    details: dict[str, Any] = Field(default_factory=dict)
    """Scorer-specific evidence, e.g. the measurements the rule scorer used."""

    @field_validator("scores", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> dict[str, int]:
        # A judge may write anything where a score belongs; invalid becomes 0, never an error.
        value = value if isinstance(value, dict) else {}
        return {d: clamp_score(value.get(d, 0)) for d in DIMENSIONS}

    @model_validator(mode="after")
    def _derive(self) -> Judgement:
        if self.total is None:
            self.total = sample_total(self.scores)
        self.ok = self.error is None and self.total is not None
        return self

    @classmethod
    def failed(cls, judge: str, error: str, **kw: Any) -> Judgement:
        return cls(judge=judge, error=error, **kw)


JudgedKey = tuple[str, int, str, str]
"""(sample uid, sampling index, judge, world model): verdicts of several models on the
same samples, read from several files, never replace one another."""


class JudgedRecord(BaseModel):
    """One judge's verdict on one prediction, self-contained for scoring and reports."""

    uid: str
    domain: str
    id: int | str
    turn_idx: int
    sample_index: int
    judge: str
    judgement: Judgement
    model: str = ""
    """The world model that made the prediction (backend:model)."""
    action: str = ""
    observation: str | None = None
    """The predicted observation as judged (a truncated answer's partial text too; None when
    the prediction was left out: a failed call or no answer)."""
    ground_truth: str = ""
    prediction_status: str = ""
    raw_text: str | None = None
    """The start of the raw output when it held no valid observation, for reports."""
    prediction_error: str | None = None
    prediction_prompt_tokens: int = 0
    prediction_completion_tokens: int = 0
    judge_settings: dict[str, Any] | None = None
    """The judge's model and sampling settings (None for old files and settings-free judges)."""
    prediction_settings: dict[str, Any] | None = None
    """The world model's run settings as its predictions file records them (backend, model,
    sampling, demonstrations), for the protocol a report states (None in old files)."""
    created_at: float = Field(default_factory=time.time)
    schema_version: int = SCHEMA_VERSION

    @property
    def key(self) -> JudgedKey:
        return (self.uid, self.sample_index, self.judge, self.model)
