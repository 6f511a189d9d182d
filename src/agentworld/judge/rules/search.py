"""Search results pages: numbered ``[n] url`` blocks with Title/Snippet/Date lines."""

from __future__ import annotations

from typing import Any

from agentworld.domains.search import result_blocks
from agentworld.judge.rules._common import DomainRules, shape_similarity

_FIELDS = ("Title:", "Snippet:")


class SearchRules(DomainRules):
    name = "search"

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        t, p = result_blocks(truth), result_blocks(pred)
        if not t:
            # Page text or a memory answer: plain text, and no invented result list.
            shape = shape_similarity(pred, truth)
            return (shape if not p else shape / 2), {"result_page": False, "shape": round(shape, 3)}
        if not p:
            return 0.0, {"result_page": True, "blocks": 0}
        well_formed = sum(all(any(x.startswith(f) for x in body) for f in _FIELDS) for _, _, body in p) / len(p)
        # Numbering counts up from 1; a batch of queries restarts it for each query.
        nums = [n for n, _, _ in p]
        numbered = all(n == 1 if i == 0 else n in (nums[i - 1] + 1, 1) for i, n in enumerate(nums))
        count = min(len(p), len(t)) / max(len(p), len(t))
        frac = 0.5 * well_formed + 0.25 * float(numbered) + 0.25 * count
        return frac, {"blocks": len(p), "well_formed": round(well_formed, 3), "count_ratio": round(count, 3)}


RULES = SearchRules()
