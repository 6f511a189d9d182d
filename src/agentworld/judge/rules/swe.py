"""SWE tool output: numbered file views, edit snippets, command output with exit codes."""

from __future__ import annotations

import itertools
import re
from typing import Any

from agentworld.judge.rules._common import DomainRules, shape_similarity

NUMBERED = re.compile(r"^\s*(\d+)\t")


def numbered_lines(text: str) -> dict[int, str]:
    return {int(m.group(1)): line[m.end():] for line in text.splitlines() if (m := NUMBERED.match(line))}


class SweRules(DomainRules):
    name = "swe"

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        shape = shape_similarity(pred, truth)
        t, p = numbered_lines(truth), numbered_lines(pred)
        if not t:
            return shape, {"file_view": False, "shape": round(shape, 3)}
        if not p:
            return 0.25 * shape, {"file_view": True, "numbered": 0}
        nums = sorted(p)
        consecutive = all(b == a + 1 for a, b in itertools.pairwise(nums))
        overlap = len(set(t) & set(p)) / len(set(t) | set(p))
        frac = 0.3 * float(consecutive) + 0.4 * overlap + 0.3 * shape
        return frac, {"consecutive": consecutive, "line_numbers": round(overlap, 3), "shape": round(shape, 3)}


RULES = SweRules()
