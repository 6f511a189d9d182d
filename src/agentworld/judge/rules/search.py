"""Search results pages: numbered ``[n] url`` blocks with Title/Snippet/Date lines."""

from __future__ import annotations

import re
from typing import Any

from agentworld.domains.errors import is_error
from agentworld.domains.presented import tool_call
from agentworld.domains.search import result_blocks
from agentworld.judge.rules._common import DomainRules, norm, shape_similarity

_QUERY_HEAD = re.compile(r"^## Results for: (.+)$", re.M)
_PAGE_HEAD = re.compile(r"^URL: (\S+)", re.M)
_MEMORY = re.compile(r"^(Added|Updated|Removed|Stored|Deleted) '|^\d+ entries:|^Error: key|^- [^:]+: ", re.M)

_FIELDS = ("Title:", "Snippet:")
_TOOL_KINDS = {"results", "page", "memory"}


def _well_formed(body: list[str]) -> bool:
    """A result block's lines (after its ``[n] url`` header) up to the next query heading:
    Title first, then exactly one Snippet."""
    lines = [x for x in body if x]
    cut = next((i for i, x in enumerate(lines) if x.startswith("## ")), len(lines))
    lines = lines[:cut]
    fields = [x.split(":", 1)[0] + ":" for x in lines if x.startswith(_FIELDS)]
    return bool(lines) and lines[0].startswith("Title:") and fields == list(_FIELDS)


class SearchRules(DomainRules):
    name = "search"
    typed_kinds = True

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        t, p = result_blocks(truth), result_blocks(pred)
        if not t:
            # Page text or a memory answer: plain text, and no invented result list.
            shape = shape_similarity(pred, truth)
            return (shape if not p else shape / 2), {"result_page": False, "shape": round(shape, 3)}
        if not p:
            return 0.0, {"result_page": True, "blocks": 0}
        # A block is its header, then Title, then one Snippet; field lines outside a block
        # (their header lost) or in another block count as broken blocks.
        good = sum(_well_formed(body) for _, _, body in p)
        titles = sum(x.startswith("Title:") for x in pred.splitlines())
        well_formed = good / max(len(p), titles)
        # Numbering counts up from 1; a batch of queries restarts it for each query.
        nums = [n for n, _, _ in p]
        numbered = all(n == 1 if i == 0 else n in (nums[i - 1] + 1, 1) for i, n in enumerate(nums))
        count = min(len(p), len(t)) / max(len(p), len(t))
        # Numbering and count are the layout of well-formed blocks: broken ones have neither.
        frac = well_formed * (0.5 + 0.25 * float(numbered) + 0.25 * count)
        return frac, {"blocks": len(p), "well_formed": round(well_formed, 3), "count_ratio": round(count, 3)}


    def kind(self, text: str, sample: Any) -> str:
        """A results page, an extracted page (``URL:`` header), a memory answer, an error
        or other text."""
        if not text.strip():
            return "empty"
        if result_blocks(text):
            return "results"
        if _PAGE_HEAD.search(text):
            return "page"
        if _MEMORY.search(text):
            return "memory"
        return "error" if is_error(text) else "text"

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        # Each tool prints its own kind: results pages come from a search, a page with a
        # URL: header from the extractor, entries from the memory tool.
        want, got = self.kind(sample.ground_truth, sample), self.kind(pred, sample)
        if want != got and {want, got} <= _TOOL_KINDS:
            return f"a {got} answer where the tool prints a {want} answer"
        call = tool_call(sample.action)
        if call is None:
            return None
        args = call[1]
        # An extracted page names its URL; a batch answers under its own queries.
        page = _PAGE_HEAD.search(pred)
        if page and isinstance(args.get("url"), str) and page.group(1) != args["url"].strip():
            return f"the page of {page.group(1)[:60]!r}, the call extracts {args['url'][:60]!r}"
        queries = [norm(q) for q in args.get("queries") or [args.get("query")] if isinstance(q, str)]
        heads = [norm(h) for h in _QUERY_HEAD.findall(pred)]
        if queries and any(h not in queries for h in heads):
            return f"results for {heads[0][:60]!r}, not the call's queries"
        return None


RULES = SearchRules()
