"""The three search tools, their schemas and the text they print.

- ``web_search``: one query or a batch; numbered results ``[n] url`` with ``Title:``,
  ``Snippet:`` and ``Date:`` lines; a batch prints one block per query under its query.
- ``web_extractor``: a result page's text, cut at :data:`EXTRACT_CHARS` with a note
  saying how to read on; unknown URLs fail as an unreachable page would.
- ``dict_memory``: a small key-value notebook (add, update, get, remove, list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlparse

from agentworld.envs.search.index import Hit, SearchEngine

EXTRACT_CHARS = 6000
MAX_QUERIES = 5
MAX_RESULTS = 10

TOOLS: list[dict[str, Any]] = [
    {
        "name": "web_search",
        "description": "Search the web. Give one query, or several queries to run as a batch. "
                       "Returns numbered results with URL, title, snippet and date.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A search query."},
                "queries": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES,
                            "description": "Several queries, answered one block each."},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 5,
                          "description": "Results per query."},
            },
        },
    },
    {
        "name": "web_extractor",
        "description": "Fetch a web page and return its readable text. Long pages are truncated; "
                       "pass offset to read further.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The page URL, e.g. from a search result."},
                "offset": {"type": "integer", "minimum": 0, "default": 0,
                           "description": "Character offset to start reading from."},
            },
            "required": ["url"],
        },
    },
    {
        "name": "dict_memory",
        "description": "A key-value notebook kept for the whole task.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "op": {"type": "string", "enum": ["add", "update", "get", "remove", "list"]},
                "key": {"type": "string"},
                "value": {"type": "string"},
            },
            "required": ["op"],
        },
    },
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


class ToolError(ValueError):
    """A call the tool refuses; the message is what the agent sees after ``Error: ``."""


class Result(Protocol):
    """What a printed search result shows: an index :class:`Hit`, or a simulated world's page."""

    @property
    def url(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def snippet(self) -> str: ...
    @property
    def date(self) -> str: ...


def format_hits(hits: Sequence[Result]) -> str:
    """Numbered results, ``[n] url`` then ``Title:``, ``Snippet:`` and ``Date:`` lines, one block each."""
    if not hits:
        return "No results found."
    blocks = [f"[{i}] {h.url}\nTitle: {h.title}\nSnippet: {h.snippet}\nDate: {h.date}" for i, h in enumerate(hits, 1)]
    return "\n\n".join(blocks)


def _int_arg(args: dict[str, Any], name: str, default: int, lo: int, hi: int | None) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"'{name}' must be an integer, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        raise ToolError(f"'{name}' must be between {lo} and {hi}, got {value}" if hi is not None
                        else f"'{name}' must be at least {lo}, got {value}")
    return value


class SearchTools:
    """The tools over one engine, with one episode's memory."""

    def __init__(self, engine: SearchEngine):
        self.engine = engine
        self.memory: dict[str, str] = {}

    def reset(self) -> None:
        self.memory = {}

    def call(self, name: str, args: dict[str, Any]) -> str:
        try:
            if name == "web_search":
                return self.web_search(args)
            if name == "web_extractor":
                return self.web_extractor(args)
            if name == "dict_memory":
                return self.dict_memory(args)
        except ToolError as exc:
            return f"Error: {exc}"
        return f"Error: unknown tool '{name}'. Available tools: {', '.join(TOOL_NAMES)}"

    def web_search(self, args: dict[str, Any]) -> str:
        k = _int_arg(args, "top_k", 5, 1, MAX_RESULTS)
        if "queries" in args:
            queries = args["queries"]
            if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
                raise ToolError("'queries' must be a list of strings")
            if not 1 <= len(queries) <= MAX_QUERIES:
                raise ToolError(f"'queries' must hold 1 to {MAX_QUERIES} queries, got {len(queries)}")
            return "\n\n".join(f"## Results for: {q}\n\n{format_hits(self._search(q, k))}" for q in queries)
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("web_search needs 'query' (a non-empty string) or 'queries' (a list of strings)")
        return format_hits(self._search(query, k))

    def _search(self, query: str, k: int) -> list[Hit]:
        return self.engine.search(query, k) if query.strip() else []

    def web_extractor(self, args: dict[str, Any]) -> str:
        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ToolError("web_extractor needs 'url' (a string)")
        offset = _int_arg(args, "offset", 0, 0, None)
        parsed = urlparse(url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ToolError(f"invalid URL '{url}': expected an absolute http(s) URL")
        page = self.engine.page(url.strip())
        if page is None:
            raise ToolError(f"failed to fetch {url}: 404 Not Found")
        text = page.text
        if offset >= len(text):
            raise ToolError(f"offset {offset} is past the end of the page ({len(text)} characters)")
        part = text[offset:offset + EXTRACT_CHARS]
        head = f"URL: {page.url}\nTitle: {page.title}\nDate: {page.date}\n\n"
        end = offset + len(part)
        if end < len(text):
            part += (f"\n\n[Content truncated: showing characters {offset}-{end} of {len(text)}. "
                     f"Call web_extractor with offset={end} to read more.]")
        return head + part

    def dict_memory(self, args: dict[str, Any]) -> str:
        op = args.get("op")
        key = args.get("key")
        if op == "list":
            if not self.memory:
                return "Memory is empty."
            return f"{len(self.memory)} entries:\n" + "\n".join(f"- {k}: {v}" for k, v in self.memory.items())
        if op not in ("add", "update", "get", "remove"):
            raise ToolError(f"unknown op {op!r}; expected one of add, update, get, remove, list")
        if not isinstance(key, str) or not key:
            raise ToolError(f"op '{op}' needs 'key' (a non-empty string)")
        if op in ("add", "update"):
            value = args.get("value")
            if not isinstance(value, str):
                raise ToolError(f"op '{op}' needs 'value' (a string)")
            if op == "add" and key in self.memory:
                raise ToolError(f"key '{key}' already exists; use op 'update' to change it")
            if op == "update" and key not in self.memory:
                raise ToolError(f"key '{key}' not found; use op 'add' to create it")
            self.memory[key] = value
            return f"{'Added' if op == 'add' else 'Updated'} '{key}' ({len(value)} characters)."
        if key not in self.memory:
            raise ToolError(f"key '{key}' not found")
        if op == "get":
            return self.memory[key]
        del self.memory[key]
        return f"Removed '{key}'."
