"""What every scorer returns, and the contract scorers implement.

A :class:`Judgement` holds integer scores 1-5 for the five dimensions of SPEC section 4;
0 marks a dimension the judge did not score validly (missing, not a number). An LLM
judge's raw scores are read leniently first (:func:`agentworld.parsing.parse_score`:
``"4/5"``, numeric strings, clamped to [1, 5], fractions rounded half to even); the
check here is the strict one stored verdicts are loaded with. A sample's total is the mean of its valid (>0) dimensions; a judgement with no
valid dimension, or whose judge failed, is not ``ok`` and is counted as a failure by the
score step, never dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator, model_validator

if TYPE_CHECKING:
    from agentworld.bench.format import BenchSample
    from agentworld.models.base import Prediction

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


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores a prediction against a benchmark sample."""

    name: str

    async def score(self, sample: BenchSample, prediction: Prediction) -> Judgement: ...
