"""More search templates: other ways of using the same engine (definitions, reading a
manual page by parts, walking documentation, checking a quoted claim), so held-out
templates (see :mod:`agentworld.envs.split`) are new tasks, not only new seeds."""

from __future__ import annotations

from collections.abc import Callable

from agentworld.envs.mcp.episode import ToolTask
from agentworld.envs.search.index import SearchEngine
from agentworld.envs.search.tasks import (
    _TRUNC,
    Gen,
    _body,
    _extract,
    _memory,
    _phrase,
    _pick,
    _search,
    _short_title,
    _target,
    _urls,
)
from agentworld.seeding import keyed_rng


def define_task(engine: SearchEngine, seed: int) -> ToolTask:
    """Definitions of several words, one of them misspelled, collected in memory."""
    rng = keyed_rng(seed, "search", "define")
    pages = [_target(engine, rng, ["gcide"]) for _ in range(2)]
    words = [_short_title(p) for p in pages]
    typo = words[0][:-1] + ("x" if not words[0].endswith("x") else "z") if len(words[0]) > 3 else words[0] + "q"

    def script() -> Gen:
        for word, page in zip(words, pages, strict=True):
            results = yield _search(f"define {word}", top_k=3)
            text = yield _extract(_pick(_urls(results), page.url))
            yield _memory("add", word.lower(), " ".join(_body(text).split())[:120])
        yield _search(f"define {typo}", top_k=2)
        yield _memory("add", words[0].lower(), "again")
        yield _memory("list")

    return ToolTask("define", f"Define {' and '.join(repr(w) for w in words)} and keep the definitions.", {}, script,
                    {"targets": [p.url for p in pages]})


def manual_task(engine: SearchEngine, seed: int) -> ToolTask:
    """A manual page read part by part, then a phrase from it searched for elsewhere."""
    rng = keyed_rng(seed, "search", "manual")
    page = _target(engine, rng, ["man"])
    name = _short_title(page)

    def script() -> Gen:
        results = yield _search(f"{name} manual page")
        url = _pick(_urls(results), page.url)
        text = yield _extract(url)
        for _ in range(2):
            if not (m := _TRUNC.search(text)):
                break
            text = yield _extract(url, int(m.group(1)))
        yield _extract(url, 10**7)  # past the end
        phrase = _phrase(_body(text), rng, 3)
        results = yield _search(queries=[phrase, f"{name} example"], top_k=2)
        yield _memory("add", "manual", f"{name}: {phrase}")
        yield _memory("get", "manual")

    return ToolTask("manual", f"Read the manual of {name} from start to end and note one thing it says.", {}, script,
                    {"target": page.url})


def doc_walk_task(engine: SearchEngine, seed: int) -> ToolTask:
    """Documentation pages opened from one result list, notes kept, revised and pruned."""
    rng = keyed_rng(seed, "search", "doc-walk")
    page = _target(engine, rng, ["python", "kernel"])
    topic = _short_title(page)

    def script() -> Gen:
        results = yield _search(topic, top_k=rng.choice([4, 5]))
        urls = _urls(results) or [page.url]
        texts = []
        for url in urls[:3]:
            texts.append((yield _extract(url)))
            yield _memory("add", f"page{len(texts)}", url)
        yield _memory("update", "page1", f"{urls[0]} ({_phrase(_body(texts[0]), rng, 5)})")
        yield _memory("remove", f"page{len(texts)}")
        yield _extract(urls[0].rsplit("/", 1)[0] + "/no-such-page.html")
        yield _memory("list")

    return ToolTask("doc-walk", f"Survey the documentation about '{topic}' and keep a list of useful pages.", {},
                    script, {"target": page.url})


def fact_check_task(engine: SearchEngine, seed: int) -> ToolTask:
    """A quoted sentence and a corrupted copy searched side by side; the source read."""
    rng = keyed_rng(seed, "search", "fact-check")
    page = _target(engine, rng, ["python", "man", "kernel", "gcide"])
    quote = _phrase(page.text, rng, rng.randint(6, 9))
    words = quote.split()
    words[len(words) // 2] = rng.choice(["banana", "volcano", "orchestra", "submarine"])
    wrong = " ".join(words)

    def script() -> Gen:
        results = yield _search(queries=[quote, wrong], top_k=3)
        urls = _urls(results)
        text = yield _extract(_pick(urls, page.url))
        verdict = "found" if quote.split()[0] in _body(text) else "not found on the first page"
        yield _memory("add", "claim", wrong)
        yield _memory("update", "claim", f"{quote} ({verdict})")
        yield _search(wrong, top_k=1)
        yield _memory("get", "claim")

    return ToolTask("fact-check", f"Check where this quote comes from and whether a variant of it is real: \"{wrong}\".",
                    {}, script, {"target": page.url})


EXTRA_TEMPLATES: dict[str, Callable[[SearchEngine, int], ToolTask]] = {
    "define": define_task,
    "manual": manual_task,
    "doc-walk": doc_walk_task,
    "fact-check": fact_check_task,
}
