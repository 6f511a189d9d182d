"""Seeded search tasks that need several searches and page extractions.

Targets are drawn from the corpus itself (a dictionary entry, a Python or kernel
documentation page, a manual page, a passage), so every task is answerable offline.
Scripts read result lists to choose what to open, take notes in memory, page through
long documents and make the usual mistakes (a mistyped URL, a missing memory key).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Generator

from agentworld.envs.mcp.episode import ToolCall, ToolTask
from agentworld.envs.search.index import SearchEngine
from agentworld.envs.search.sources import Page
from agentworld.seeding import keyed_rng

Gen = Generator[ToolCall, str, None]
_URL = re.compile(r"^\[\d+\] (\S+)$", re.M)
_TRUNC = re.compile(r"Call web_extractor with offset=(\d+)")


def _search(query: str | None = None, queries: list[str] | None = None, top_k: int | None = None) -> ToolCall:
    args: dict[str, object] = {"queries": queries} if queries else {"query": query}
    if top_k:
        args["top_k"] = top_k
    return {"name": "web_search", "arguments": args}


def _extract(url: str, offset: int | None = None) -> ToolCall:
    return {"name": "web_extractor", "arguments": {"url": url} | ({"offset": offset} if offset else {})}


def _memory(op: str, key: str | None = None, value: str | None = None) -> ToolCall:
    args = {"op": op} | ({"key": key} if key is not None else {}) | ({"value": value} if value is not None else {})
    return {"name": "dict_memory", "arguments": args}


def _urls(obs: str) -> list[str]:
    return _URL.findall(obs)


def _body(obs: str) -> str:
    """The page text of an extraction (after its header), without the truncation note."""
    text = obs.split("\n\n", 1)[1] if "\n\n" in obs else obs
    return text.split("\n\n[Content truncated", 1)[0]


def _phrase(text: str, rng: random.Random, words: int = 6) -> str:
    toks = [t for t in re.findall(r"[A-Za-z][A-Za-z0-9_]+", text) if len(t) > 2]
    if len(toks) <= words:
        return " ".join(toks)
    start = rng.randrange(0, len(toks) - words)
    return " ".join(toks[start:start + words])


def _pick(urls: list[str], want: str) -> str:
    """The target's URL if the results hold it, else the top result (what an agent would open)."""
    return want if want in urls else (urls[0] if urls else want)


def _target(engine: SearchEngine, rng: random.Random, preferred: list[str]) -> Page:
    available = [s for s in preferred if s in engine.sources()] or engine.sources()
    source = rng.choice(available)
    return engine.sample_pages(source, 1, [rng.randrange(10**9)])[0]


def _short_title(page: Page) -> str:
    return re.sub(r" - (definition from GCIDE|Linux manual page)$", "", page.title)


# -- templates -----------------------------------------------------------------------------
def lookup_task(engine: SearchEngine, seed: int) -> ToolTask:
    """Find a page, read it (paging if long), note a fact, follow a term to a second page."""
    rng = keyed_rng(seed, "search", "lookup")
    page = _target(engine, rng, ["gcide", "python", "kernel", "man"])
    name = _short_title(page)
    key = f"note:{name[:40]}"

    def script() -> Gen:
        results = yield _search(f"{name}", top_k=rng.choice([3, 5]))
        url = _pick(_urls(results), page.url)
        text = yield _extract(url)
        if (m := _TRUNC.search(text)) and rng.random() < 0.6:
            yield _extract(url, int(m.group(1)))
        yield _memory("add", key, " ".join(_body(text).split())[:160])
        follow = _phrase(_body(text), rng, rng.randint(2, 4))
        results = yield _search(follow)
        urls = _urls(results)
        if urls:
            yield _extract(urls[min(1, len(urls) - 1)])
        yield _memory("get", key)
        yield _memory("list")

    return ToolTask("lookup", f"Look up '{name}', note what it says, and follow one related term.",
                    {}, script, {"target": page.url})


def compare_task(engine: SearchEngine, seed: int) -> ToolTask:
    """Two targets found with one batch search, both read, notes added and corrected."""
    rng = keyed_rng(seed, "search", "compare")
    a = _target(engine, rng, ["man", "python"])
    b = _target(engine, rng, ["man", "python", "kernel"])
    na, nb = _short_title(a), _short_title(b)

    def script() -> Gen:
        results = yield _search(queries=[na, nb])
        blocks = results.split("## Results for: ")[1:] or [results]
        urls_a = _urls(blocks[0])
        urls_b = _urls(blocks[-1])
        ta = yield _extract(_pick(urls_a, a.url))
        yield _memory("add", "first", _phrase(_body(ta), rng, 10))
        if rng.random() < 0.5:
            yield _extract(a.url.replace("https://", "https://www.", 1) if "www." not in a.url else a.url + "-old")
        tb = yield _extract(_pick(urls_b, b.url))
        yield _memory("add", "second", _phrase(_body(tb), rng, 10))
        yield _memory("add", "first", "duplicate")
        yield _memory("update", "first", f"{na}: " + _phrase(_body(ta), rng, 8))
        yield _memory("get", "third")
        yield _memory("remove", "second")
        yield _memory("list")

    return ToolTask("compare", f"Compare '{na}' with '{nb}' and keep short notes on both.", {}, script,
                    {"targets": [a.url, b.url]})


def trace_task(engine: SearchEngine, seed: int) -> ToolTask:
    """Start from a quoted passage, find its page, then chase a second passage of it."""
    rng = keyed_rng(seed, "search", "trace")
    page = _target(engine, rng, ["python", "kernel", "man", "gcide"])
    first = _phrase(page.text, rng, rng.randint(5, 8))

    def script() -> Gen:
        results = yield _search(first)
        urls = _urls(results)
        if not urls:
            results = yield _search(_short_title(page))
            urls = _urls(results)
        url = _pick(urls, page.url)
        text = yield _extract(url)
        yield _memory("add", "source", url)
        second = _phrase(_body(text), rng, 4)
        results = yield _search(queries=[second, f"{_short_title(page)} overview"], top_k=3)
        more = [u for u in _urls(results) if u != url]
        if more:
            yield _extract(more[0])
        yield _extract("https://example.invalid/page" if rng.random() < 0.5 else "not a url")
        yield _memory("get", "source")

    return ToolTask("trace", f"Find the page that says: \"{first}\" and what else it covers.", {}, script,
                    {"target": page.url})


TEMPLATES: dict[str, Callable[[SearchEngine, int], ToolTask]] = {
    "lookup": lookup_task,
    "compare": compare_task,
    "trace": trace_task,
}

# Registered here so that every template is in one table; the module reads this one's helpers.
from agentworld.envs.search.tasks_extra import EXTRA_TEMPLATES  # noqa: E402

TEMPLATES.update(EXTRA_TEMPLATES)


def make_task(engine: SearchEngine, seed: int, template: str | None = None) -> ToolTask:
    name = template or keyed_rng(seed, "search", "template").choice(sorted(TEMPLATES))
    if name not in TEMPLATES:
        raise KeyError(f"unknown search task template {name!r} (known: {', '.join(TEMPLATES)})")
    return TEMPLATES[name](engine, seed)
