"""Seeded web tasks on the loopback sites, each with a scripted policy.

Template families (the prefix of each name; the held-out split keeps a training template
in every family): ``ds_`` search, filter, sort, paginate and query the Datasette index;
``docs_`` navigate and read the Python docs; ``mw_`` fill MiniWoB++ forms; ``tabs_``
open, switch and close tabs; ``err_`` the usual mistakes (unknown or hidden ids, a
blocked or malformed URL, bad SQL, malformed actions), each followed by a recovery.

Targets come from the documentation inventory (a module, a function, a page) or from
the MiniWoB page itself (seeded in the page), so every task is solvable offline. Scripts
find element ids in each observation, as an agent would.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from urllib.parse import quote, quote_plus

from agentworld.envs.web.episode import WebTask
from agentworld.envs.web.pagetext import (  # noqa: F401  (re-exported: scripts and tests read pages with them)
    NO_BID,
    Gen,
    Node,
    click,
    fill,
    find,
    find_url,
    goto,
    hover,
    instruction,
    nodes,
    press,
    quoted,
    scroll,
    select,
    texts,
    type_,
)
from agentworld.envs.web.sites import DOCS, DOCS_DIR, INDEX, read_inventory
from agentworld.envs.web.tasks_miniwob import MINIWOB_TEMPLATES
from agentworld.seeding import keyed_rng

IDX = f"http://{INDEX}"
DOC = f"http://{DOCS}"
TABLE = f"{IDX}/pydocs/objects"


# -- targets from the documentation inventory ----------------------------------------------------
@dataclass(frozen=True)
class Target:
    name: str
    kind: str
    module: str
    page: str


MAX_PAGE_BYTES = 60_000
"""Documentation pages larger than this (a few, up to 400 kB) take seconds per observation;
tasks use the smaller half."""


def _small(page: str) -> bool:
    path = DOCS_DIR / page
    return path.is_file() and path.stat().st_size <= MAX_PAGE_BYTES


@cache
def _targets() -> tuple[Target, ...]:
    inv = read_inventory()
    modules = {n for n, k, _, _ in inv if k == "py:module"}
    out = []
    for name, kind, uri, _ in inv:
        if kind in ("py:function", "py:class", "py:method", "py:exception") and "." in name:
            module = next((".".join(name.split(".")[:i]) for i in range(name.count("."), 0, -1)
                           if ".".join(name.split(".")[:i]) in modules), None)
            if module and "/" in uri and _small(uri.partition("#")[0]):
                out.append(Target(name, kind, module, uri.partition("#")[0]))
    return tuple(out)


@cache
def _pages() -> tuple[tuple[str, str], ...]:
    return tuple((uri, title) for _, kind, uri, title in read_inventory()
                 if kind == "std:doc" and uri.startswith("library/") and _small(uri))


@cache
def _module_sizes() -> dict[str, int]:
    sizes: dict[str, int] = {}
    for name, kind, _, _ in read_inventory():
        if kind.startswith("py:") and kind != "py:module":
            module = name.rsplit(".", 1)[0]
            sizes[module] = sizes.get(module, 0) + 1
    return sizes


def target(rng: random.Random) -> Target:
    return rng.choice(_targets())


def library_page(rng: random.Random) -> tuple[str, str]:
    return rng.choice(_pages())


def sql_url(sql: str) -> str:
    return f"{IDX}/pydocs?sql={quote_plus(sql)}"


# -- Datasette -----------------------------------------------------------------------------------
def ds_search_object(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_search_object")
    t = target(rng)
    term = t.name.rsplit(".", 1)[-1]

    def script(obs: str) -> Gen:
        obs = yield goto(IDX + "/")
        obs = yield click(find(obs, "link", "objects"))
        obs = yield fill(find(obs, "searchbox"), term)
        obs = yield press("Enter")
        obs = yield click(_row_link(obs, rng))
        obs = yield click(find_url(obs, "/pydocs/pages/"))
        yield "go_back()"

    return WebTask("ds_search_object", f"In the Python docs index, search the objects table for '{term}' and open a "
                   "matching row and its documentation page entry.", {"start_url": f"{DOC}/index.html"}, script,
                   {"target": t.name})


def _row_link(obs: str, rng: random.Random) -> str:
    rows = [n.bid for n in nodes(obs) if n.role == "link" and n.name.isdigit()]
    return rng.choice(rows[:3]) if rows else NO_BID


def ds_filter_form(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_filter_form")
    t = target(rng)
    op = rng.choice(["=", "starts with"])
    value = t.module if op == "=" else t.module[: max(3, len(t.module) // 2)]

    def script(obs: str) -> Gen:
        obs = yield goto(TABLE)
        boxes = [n.bid for n in nodes(obs) if n.role == "combobox"]
        obs = yield select(boxes[0] if boxes else NO_BID, "module")
        obs = yield select(boxes[1] if len(boxes) > 1 else NO_BID, op)
        obs = yield fill(find(obs, "textbox", ""), value)
        obs = yield click(find(obs, "button", "Apply"))
        obs = yield click(find(obs, "link", "name"))
        yield click(_row_link(obs, rng))

    return WebTask("ds_filter_form", f"Filter the objects table to module {op} '{value}' with the filter form, sort by "
                   "name and open a row.", {"start_url": IDX + "/"}, script, {"module": t.module})


def ds_sort_columns(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_sort_columns")
    kind = rng.choice(["py:function", "py:class", "py:exception", "py:data", "py:attribute"])
    cols = rng.sample(["name", "module", "page", "display"], 2)

    def script(obs: str) -> Gen:
        obs = yield scroll(300)
        obs = yield click(find(obs, "link", cols[0]))
        obs = yield click(find(obs, "link", contains=cols[0]))
        obs = yield click(find(obs, "link", cols[1]))
        obs = yield scroll(400)
        yield click(_row_link(obs, rng))

    return WebTask("ds_sort_columns", f"List the {kind} entries, sort them by {cols[0]} both ways, then by {cols[1]}.",
                   {"start_url": f"{TABLE}?kind={quote(kind)}"}, script, {"kind": kind})



def ds_paginate(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_paginate")
    big = sorted(m for m, n in _module_sizes().items() if n >= 40)
    module = rng.choice(big)
    pages = rng.randint(2, 3)

    def script(obs: str) -> Gen:
        obs = yield scroll(800)
        for _ in range(pages):
            obs = yield click(find(obs, "link", "Next page"))
        obs = yield "go_back()"
        yield click(_row_link(obs, rng))

    return WebTask("ds_paginate", f"Page through the objects of {module} sorted by name, {pages} pages on.",
                   {"start_url": f"{TABLE}?_search={quote(module)}&_sort=name"}, script, {"module": module})


def ds_facets(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_facets")
    t = target(rng)

    def script(obs: str) -> Gen:
        obs = yield scroll(200)
        obs = yield click(find(obs, "link", t.kind))
        obs = yield click(find(obs, "link", t.module))
        obs = yield click(find(obs, "link", "✖"))
        yield click(_row_link(obs, rng))

    return WebTask("ds_facets", f"Use the kind and module facets to narrow the objects to {t.kind} entries of {t.module}.",
                   {"start_url": f"{TABLE}?_facet=kind&_facet=module&page={quote(t.page)}"}, script,
                   {"module": t.module, "kind": t.kind})


def ds_sql_query(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_sql_query")
    t = target(rng)
    first = f"select kind, count(*) as n from objects where module = '{t.module}' group by kind order by n desc"
    second = (f"select name, page from objects where module = '{t.module}' and kind = '{t.kind}' "
              f"order by name limit {rng.choice([5, 8])}")

    def script(obs: str) -> Gen:
        obs = yield goto(sql_url(first))
        obs = yield scroll(300)
        obs = yield goto(sql_url(second))
        obs = yield click(find(obs, "link", "pydocs"))
        yield click(find(obs, "link", "pages"))

    return WebTask("ds_sql_query", f"Count the documented objects of {t.module} by kind with SQL, then list its {t.kind} "
                   "entries.", {"start_url": f"{IDX}/pydocs"}, script, {"module": t.module})


def ds_row_links(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_row_links")
    t = target(rng)

    def script(obs: str) -> Gen:
        obs = yield goto(f"{TABLE}?name={quote(t.name)}")
        obs = yield click(_row_link(obs, rng))
        obs = yield click(find_url(obs, "/pydocs/pages/"))
        obs = yield click(find_url(obs, "objects?page="))
        obs = yield "go_back()"
        yield "go_back()"

    return WebTask("ds_row_links", f"Open the row of {t.name}, follow it to its page row and to that page's other objects.",
                   {"start_url": TABLE}, script, {"target": t.name})


def ds_pages_table(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_pages_table")
    col = rng.choice(["objects", "title"])

    def script(obs: str) -> Gen:
        obs = yield scroll(100)
        obs = yield click(find(obs, "link", col))
        obs = yield click(find(obs, "link", contains=col))
        links = [n.bid for n in nodes(obs) if n.role == "link" and n.name.startswith("library")]
        obs = yield click(rng.choice(links[:5]) if links else NO_BID)
        obs = yield "go_back()"
        yield click(find(obs, "link", "Next page"))

    return WebTask("ds_pages_table", f"Sort the documentation pages by {col}, both ways, and open one.",
                   {"start_url": f"{IDX}/pydocs/pages"}, script, {"column": col})


def ds_search_filter(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_search_filter")
    word = rng.choice(["open", "read", "write", "close", "get", "set", "load", "dump", "parse", "format", "copy", "find"])
    kind = rng.choice(["py:function", "py:method"])

    def script(obs: str) -> Gen:
        obs = yield goto(TABLE)
        obs = yield click(find(obs, "searchbox"))
        obs = yield type_(word)
        obs = yield press("Enter")
        boxes = [n.bid for n in nodes(obs) if n.role == "combobox"]
        obs = yield select(boxes[0] if boxes else NO_BID, "kind")
        obs = yield fill(find(obs, "textbox", ""), kind)
        yield click(find(obs, "button", "Apply"))

    return WebTask("ds_search_filter", f"Search the objects for '{word}' and keep only the {kind} results.",
                   {"start_url": IDX + "/"}, script, {"word": word})


def ds_json_export(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "ds_json_export")
    t = target(rng)

    def script(obs: str) -> Gen:
        obs = yield scroll(150)
        obs = yield click(find(obs, "link", "json"))
        obs = yield "go_back()"
        obs = yield click(find(obs, "link", "advanced"))
        yield click(find(obs, "link", "array"))

    return WebTask("ds_json_export", f"Export the objects of {t.module} as JSON, in the default and the array shape.",
                   {"start_url": f"{TABLE}?module={quote(t.module)}"}, script, {"module": t.module})


# -- the docs site -------------------------------------------------------------------------------
def docs_navigate(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_navigate")
    steps = rng.randint(1, 3)

    def script(obs: str) -> Gen:
        obs = yield goto(f"{DOC}/index.html")
        obs = yield click(find(obs, "link", contains="Library Reference"))
        small = {p for p, _ in _pages()}
        chapters = [n.bid for n in nodes(obs) if n.role == "link" and "#" not in n.props
                    and any(f"docs.test/{p}'" in n.props for p in small)]
        obs = yield click(rng.choice(chapters) if chapters else NO_BID)
        for _ in range(steps):
            obs = yield click(find(obs, "link", "next"))
        yield click(find(obs, "link", "previous"))

    return WebTask("docs_navigate", f"From the docs home, open the library reference, a chapter, and read on {steps} pages.",
                   {"start_url": f"{DOC}/about.html"}, script, {"steps": steps})


def docs_search(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_search")
    t = target(rng)
    term = t.name.rsplit(".", 1)[-1]

    def script(obs: str) -> Gen:
        obs = yield fill(find(obs, "textbox", "Quick search"), term)
        obs = yield press("Enter")
        obs = yield "noop(1500)"
        obs = yield click(find(obs, "link", contains=term))
        yield scroll(400)

    return WebTask("docs_search", f"Search the Python docs for '{term}' and open the result.",
                   {"start_url": f"{DOC}/library/index.html"}, script, {"term": term})


def docs_back_forward(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_back_forward")
    page, title = library_page(rng)

    def script(obs: str) -> Gen:
        obs = yield scroll(500)
        links = [n.bid for n in nodes(obs) if n.role == "link" and "docs.test/library/" in n.props
                 and page not in n.props]
        obs = yield click(rng.choice(links) if links else find(obs, "link", "next"))
        obs = yield "go_back()"
        obs = yield "go_forward()"
        obs = yield "go_back()"
        obs = yield press("Home")
        yield click(find(obs, "link", "modules"))

    return WebTask("docs_back_forward", f"On the page '{title}', follow a link to another library page and move back "
                   "and forward through the history.", {"start_url": f"{DOC}/{page}"}, script, {"page": page})


def docs_scroll_read(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_scroll_read")
    page, title = library_page(rng)
    amount = rng.choice([500, 700, 900])

    def script(obs: str) -> Gen:
        obs = yield scroll(amount)
        obs = yield scroll(amount)
        obs = yield scroll(-amount // 2)
        links = [n.bid for n in nodes(obs) if n.role == "link"]
        obs = yield hover(rng.choice(links) if links else NO_BID)
        yield press("End")

    return WebTask("docs_scroll_read", f"Read through '{title}' by scrolling.", {"start_url": f"{DOC}/{page}"}, script,
                   {"page": page})


def docs_modindex(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_modindex")
    t = target(rng)
    letter = t.module[0].lower()

    def script(obs: str) -> Gen:
        obs = yield goto(f"{DOC}/py-modindex.html")
        obs = yield click(find(obs, "link", letter))
        obs = yield click(find(obs, "link", t.module))
        yield click(find(obs, "link", contains=t.name.rsplit(".", 1)[-1]))

    return WebTask("docs_modindex", f"Find module {t.module} in the module index and open it.",
                   {"start_url": f"{DOC}/index.html"}, script, {"module": t.module})


def docs_genindex(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "docs_genindex")
    letters = [p.stem.removeprefix("genindex-") for p in sorted(DOCS_DIR.glob("genindex-?.html"))
               if p.stat().st_size <= MAX_PAGE_BYTES]
    letter = rng.choice(letters or ["J"])

    def script(obs: str) -> Gen:
        obs = yield goto(f"{DOC}/genindex.html")
        obs = yield click(find(obs, "link", letter))
        obs = yield scroll(1200)
        obs = yield press("Home")
        yield click(find_url(obs, "docs.test/library/", nth=rng.randint(0, 5)))

    return WebTask("docs_genindex", f"Look up the index entries under {letter} in the general index.",
                   {"start_url": f"{DOC}/bugs.html"}, script, {"letter": letter})


# -- tabs ----------------------------------------------------------------------------------------
def tabs_compare(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "tabs_compare")
    t = target(rng)

    def script(obs: str) -> Gen:
        obs = yield "new_tab()"
        obs = yield goto(f"{DOC}/{t.page}")
        obs = yield "tab_focus(0)"
        obs = yield click(_row_link(obs, rng))
        obs = yield "tab_focus(1)"
        yield "tab_close()"

    return WebTask("tabs_compare", f"Compare the index rows of {t.module} with its documentation page in a second tab.",
                   {"start_url": f"{TABLE}?module={quote(t.module)}"}, script, {"module": t.module})


def tabs_preopened(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "tabs_preopened")
    t = target(rng)
    page, _ = library_page(rng)

    def script(obs: str) -> Gen:
        obs = yield "tab_focus(0)"
        obs = yield scroll(600)
        obs = yield "tab_focus(2)"
        obs = yield click(find(obs, "link", "name"))
        obs = yield "tab_close()"
        yield "tab_focus(0)"

    return WebTask("tabs_preopened", "Three tabs are open: look at each and close the one you no longer need.",
                   {"tabs": [f"{DOC}/{page}", f"{DOC}/{t.page}"], "start_url": f"{TABLE}?module={quote(t.module)}"},
                   script, {"module": t.module})


def tabs_many(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "tabs_many")
    a, b = rng.sample(_pages(), 2)

    def script(obs: str) -> Gen:
        yield "new_tab()"
        yield goto(f"{DOC}/{a[0]}")
        yield "new_tab()"
        yield goto(f"{DOC}/{b[0]}")
        yield "tab_focus(1)"
        yield "tab_close()"
        yield "tab_close()"

    return WebTask("tabs_many", f"Open '{a[1]}' and '{b[1]}' in new tabs, then close them again.",
                   {"start_url": f"{DOC}/library/index.html"}, script, {"pages": [a[0], b[0]]})


# -- errors and recoveries -------------------------------------------------------------------------
def err_unknown_bid(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_unknown_bid")
    t = target(rng)
    missing = str(rng.randint(900, 5000))

    def script(obs: str) -> Gen:
        obs = yield click(missing)
        obs = yield fill(find(obs, "link", "home"), t.module)
        obs = yield fill(find(obs, "searchbox"), t.module)
        obs = yield press("Enter")
        yield click(_row_link(obs, rng))

    return WebTask("err_unknown_bid", f"Search the objects table for {t.module} (the first tries use wrong element ids).",
                   {"start_url": TABLE}, script, {"missing": missing})


def err_hidden_element(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_hidden_element")
    page, title = library_page(rng)
    hidden = str(rng.randint(2, 6))  # <head> children: marked, but never rendered

    def script(obs: str) -> Gen:
        obs = yield click(hidden)
        obs = yield hover(hidden)
        obs = yield click(find(obs, "link", "next"))
        yield click(find(obs, "link", "previous"))

    return WebTask("err_hidden_element", f"On '{title}', go to the next page (the first tries target an element that "
                   "is not displayed).", {"start_url": f"{DOC}/{page}"}, script, {"hidden": hidden})


def err_bad_goto(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_bad_goto")
    outside = rng.choice(["https://www.python.org/", "http://example.com/", "https://pypi.org/simple/", "http://10.0.0.1/"])
    typo = rng.choice(["http://doc.test/", "http://indx.test/", "http://docs.tset/"])

    def script(obs: str) -> Gen:
        yield goto(outside)
        yield goto(typo)
        yield goto(DOCS + "/library/json.html")
        yield "go_back()"
        yield goto(f"{DOC}/library/json.html")

    return WebTask("err_bad_goto", "Open the json module's documentation (the first URLs tried are wrong or not reachable).",
                   {"start_url": f"{DOC}/library/index.html"}, script, {"outside": outside})


def err_bad_sql(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_bad_sql")
    t = target(rng)
    broken = rng.choice([f"selct name from objects where module = '{t.module}'",
                         f"select name from object where module = '{t.module}'",
                         f"select nam from objects where module = '{t.module}'"])

    def script(obs: str) -> Gen:
        obs = yield goto(sql_url(broken))
        obs = yield goto(sql_url(f"select name, kind from objects where module = '{t.module}' limit 5"))
        yield click(find(obs, "link", "pydocs"))

    return WebTask("err_bad_sql", f"List a few objects of {t.module} with SQL (the first query has a mistake).",
                   {"start_url": f"{IDX}/pydocs"}, script, {"module": t.module})


def err_missing_pages(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_missing_pages")
    row = rng.randint(20000, 99999)
    page = rng.choice(["library/nosuchmodule.html", "library/json2.html", "tutorial/missing.html"])

    def script(obs: str) -> Gen:
        yield goto(f"{TABLE}/{row}")
        yield goto(f"{IDX}/pydocs/no_such_table")
        yield goto(f"{DOC}/{page}")
        yield "go_back()"
        yield "go_back()"

    return WebTask("err_missing_pages", "Open a row, a table and a page that do not exist, then go back.",
                   {"start_url": TABLE}, script, {"row": row})


def err_malformed_actions(seed: int) -> WebTask:
    rng = keyed_rng(seed, "web", "err_malformed_actions")
    t = target(rng)
    bad = rng.sample(["click(12", "press('Enter')", "fill('7')", "tab_focus(7)", "scroll('down')", "click(bid=)",
                      "goto()"], 3)

    def script(obs: str) -> Gen:
        obs = yield bad[0]
        obs = yield bad[1]
        obs = yield select(find(obs, "link", "home"), "x")
        obs = yield bad[2]
        obs = yield fill(find(obs, "searchbox"), t.name.rsplit(".", 1)[-1])
        yield press("Enter")

    return WebTask("err_malformed_actions", f"Search for {t.name} (several actions are malformed first).",
                   {"start_url": TABLE}, script, {"bad": bad})


TEMPLATES: dict[str, Callable[[int], WebTask]] = {f.__name__: f for f in [
    ds_search_object, ds_filter_form, ds_sort_columns, ds_paginate, ds_facets, ds_sql_query, ds_row_links,
    ds_pages_table, ds_search_filter, ds_json_export,
    docs_navigate, docs_search, docs_back_forward, docs_scroll_read, docs_modindex, docs_genindex,
    tabs_compare, tabs_preopened, tabs_many,
    err_unknown_bid, err_hidden_element, err_bad_goto, err_bad_sql, err_missing_pages, err_malformed_actions,
]}
TEMPLATES.update(MINIWOB_TEMPLATES)


def template_families() -> dict[str, str]:
    """Template -> family (its prefix): the split keeps a training template in every family."""
    return {name: name.split("_", 1)[0] for name in TEMPLATES}


def make_task(seed: int, template: str | None = None) -> WebTask:
    name = template or keyed_rng(seed, "web", "template").choice(sorted(TEMPLATES))
    if name not in TEMPLATES:
        raise KeyError(f"unknown web task template {name!r} (known: {', '.join(TEMPLATES)})")
    return TEMPLATES[name](seed)
