"""A world model's prediction, and the stored line of a predictions file."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from agentworld.parsing import Status

SCHEMA_VERSION = 1
"""Version of the prediction and verdict record layout (``schema_version`` of each line)."""

Key = tuple[str, int]
"""(sample uid, sampling index): one stored prediction."""


class Prediction(BaseModel):
    """A parsed prediction of the next observation (or a failed call), as stored in results."""

    text: str = ""
    """The raw model output."""
    observation: str | None = None
    reasoning: str | None = None
    status: Status = Status.missing
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    error: str | None = None
    """Set when the call failed (after retries); the prediction is then not valid."""
    sample_index: int = 0
    cached: bool = False
    backend: str = ""
    model: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """A scored answer: the call succeeded and the output had a closed block or
        untagged text (the published evaluation scores both; ``status`` tells which)."""
        return self.error is None and self.status.usable and self.observation is not None


class PredictionRecord(BaseModel):
    """One stored prediction: which sample, which sampling index, what came back."""

    uid: str
    domain: str
    id: int | str
    turn_idx: int
    sample_index: int
    prediction: Prediction
    settings: dict[str, Any] | None = None
    """Backend, model id and resolved generation settings of the run (None in old files)."""
    created_at: float = Field(default_factory=time.time)
    schema_version: int = SCHEMA_VERSION

    @property
    def key(self) -> Key:
        return (self.uid, self.sample_index)
