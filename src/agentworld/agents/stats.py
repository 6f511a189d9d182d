"""Confidence intervals for agent evaluation: Wilson for success rates, Student t for mean rewards."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as _st


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float
    n: int

    def to_record(self) -> dict[str, float | int]:
        return {"value": round(self.value, 4), "low": round(self.low, 4), "high": round(self.high, 4), "n": self.n}

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval of a binomial proportion (sound at 0 and n successes)."""
    if n == 0:
        return Interval(0.0, 0.0, 1.0, 0)
    z = _st.norm.ppf(0.5 + confidence / 2)
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), n)


def mean_t(values: list[float], confidence: float = 0.95, *, bounds: tuple[float, float] = (0.0, 1.0)) -> Interval:
    """The mean with a Student t interval, clipped to the reward's range."""
    n = len(values)
    if n == 0:
        return Interval(0.0, bounds[0], bounds[1], 0)
    m = sum(values) / n
    if n == 1:
        return Interval(m, bounds[0], bounds[1], 1)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    half = _st.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return Interval(m, max(bounds[0], m - half), min(bounds[1], m + half), n)
