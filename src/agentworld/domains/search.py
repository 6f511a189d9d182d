"""Search: web search, page extraction and a key-value memory; observations are result pages."""

import re
from collections.abc import Mapping

from agentworld.domains._spec import DomainSpec
from agentworld.domains.effects import Effect, Effects
from agentworld.domains.presented import tool_call

SPEC = DomainSpec(
    name="search",
    title="Web search",
    environment="a web search engine, a page-text extractor and a small key-value memory",
    action_space=(
        "Each action is one JSON tool call. "
        '`web_search` {"query": "..."} or {"queries": ["...", "..."]} returns ranked results; '
        '`web_extractor` {"url": "..."} returns the readable text of a page; '
        '`dict_memory` {"op": "add|update|get|remove|list", "key": "...", "value": "..."} '
        "stores notes for later turns."
    ),
    observation_format=(
        "Search results are numbered blocks, one per hit:\n"
        "[1] https://example.org/page\nTitle: ...\nSnippet: ...\nDate: YYYY-MM-DD\n"
        "A batch of queries gives one such list per query, each under its query. Extracted "
        "pages are plain text, cut with a truncation note when long; unknown or unreachable "
        "URLs give an error message. Memory operations answer with the stored value or a "
        "short status line."
    ),
    judge_guidance=(
        "The observation is a search results page (numbered `[n] url` blocks with Title, "
        "Snippet and Date lines), an extracted page, or a memory answer. Check the "
        "layout, that results are on topic for the query, that dates and URLs look real, "
        "and that notes stored with dict_memory are returned exactly."
    ),
)

HIT = re.compile(r"^[ \t]*\[(?P<n>\d+)\][ \t]+(?P<url>\S+)", re.MULTILINE)
"""The head line of one search hit: ``[n] url``."""


def result_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """``(number, url, following lines)`` for each ``[n] url`` block of a results page."""
    blocks: list[tuple[int, str, list[str]]] = []
    for line in text.splitlines():
        m = HIT.match(line)
        if m:
            blocks.append((int(m.group("n")), m.group("url"), []))
        elif blocks:
            blocks[-1][2].append(line.strip())
    return blocks


def effects(action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """What a search-domain call did: memory entries set or removed, pages extracted
    (their first 4000 characters, which later extractions must agree with)."""
    call = tool_call(action)
    if call is None:
        return Effects()
    name, args = call
    if name == "dict_memory":
        op, key = args.get("op"), args.get("key")
        if op in ("add", "update") and key is not None:
            return Effects([Effect("remember", str(key), str(args.get("value", "")))])
        if op == "remove" and key is not None:
            return Effects([Effect("forget", str(key))])
    elif name == "web_extractor" and isinstance(args.get("url"), str):
        return Effects([Effect("extract", args["url"], observation[:4000])])
    return Effects()
