"""Search: web search, page extraction and a key-value memory; observations are result pages."""

from agentworld.domains._spec import DomainSpec

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
)
