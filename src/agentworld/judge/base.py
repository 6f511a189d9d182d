"""What every scorer returns, and the contract scorers implement.

The verdict type, :class:`~agentworld.records.verdict.Judgement`, is a record and lives in
:mod:`agentworld.records.verdict`; it is re-exported here for scorers. An LLM judge's raw
scores are read leniently first (:func:`agentworld.parsing.parse_score`: ``"4/5"``,
numeric strings, clamped to [1, 5], fractions rounded half to even); the check in
``Judgement`` is the strict one stored verdicts are loaded with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentworld.records.verdict import (  # the record types, re-exported for scorers
    DIMENSIONS as DIMENSIONS,
)
from agentworld.records.verdict import (
    SCORE_MAX as SCORE_MAX,
)
from agentworld.records.verdict import (
    SCORE_MIN as SCORE_MIN,
)
from agentworld.records.verdict import (
    Judgement as Judgement,
)
from agentworld.records.verdict import (
    clamp_score as clamp_score,
)
from agentworld.records.verdict import (
    sample_total as sample_total,
)

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.prediction import Prediction


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores a prediction against a benchmark sample."""

    name: str

    async def score(self, sample: BenchSample, prediction: Prediction) -> Judgement: ...
