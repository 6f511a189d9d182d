"""Judges side by side: each must have its own name, since verdicts and scores are keyed by it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class JudgeNameClash(ValueError):
    """Two judges would write their verdicts under one name."""


def distinct_judge_names(scorers: Sequence[Any]) -> None:
    """Judges with one default name (same model, different endpoints) get their endpoint
    added (``name@url``), so their verdicts and scores stay apart; a clash left after that
    raises :class:`JudgeNameClash`. Renames in place."""
    names = [s.name for s in scorers]
    for s in scorers:
        url = getattr(s.wm.backend, "base_url", None) if hasattr(s, "wm") else None
        if names.count(s.name) > 1 and url:
            s.name = f"{s.name}@{url}"
    names = [s.name for s in scorers]
    if dup := next((n for n in names if names.count(n) > 1), None):
        raise JudgeNameClash(f"two judges are named {dup!r}")
