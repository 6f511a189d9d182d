"""A fictional world's web: one page per entity, a search engine that teases, and a fact check.

Pages state one fact per sentence, rendered from the database. Search results show a
page's URL, title and a snippet that names what the page covers but never a value, so an
agent must extract pages to answer. :meth:`FictionalWorld.check_text` reads any page
text (rendered or simulated by a world model) and reports every stated fact that
contradicts the database.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.seeding import unit_hash
from agentworld.sim.ledger import Conflict

_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d{4,}\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _a(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


@dataclass
class Page:
    url: str
    title: str
    kind: str
    text: str
    teaser: str
    date: str

    @property
    def snippet(self) -> str:
        """Search results show the teaser as the snippet."""
        return self.teaser


@dataclass
class FictionalWorld:
    """A loaded world database with its rendered pages."""

    path: Path
    host: str
    pages: dict[str, Page] = field(default_factory=dict)
    people: dict[str, dict] = field(default_factory=dict)
    cities: dict[str, dict] = field(default_factory=dict)
    orgs: dict[str, dict] = field(default_factory=dict)
    works: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> FictionalWorld:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"world database not found: {path}")
        db = sqlite3.connect(path)
        db.row_factory = sqlite3.Row
        world = cls(path=path, host=f"wiki.{slug(path.stem).lower()}.fict")
        countries = {r["id"]: r["name"] for r in db.execute("SELECT * FROM countries")}
        city_by_id = {r["id"]: {**dict(r), "country": countries[r["country_id"]]} for r in db.execute("SELECT * FROM cities")}
        person_by_id = {r["id"]: dict(r) for r in db.execute("SELECT * FROM people")}
        org_by_id = {r["id"]: dict(r) for r in db.execute("SELECT * FROM organizations")}
        for p in person_by_id.values():
            p["birth_city"] = city_by_id[p["birth_city_id"]]["name"]
            p["employer"] = org_by_id[p["employer_id"]]["name"] if p["employer_id"] else None
        for o in org_by_id.values():
            o["hq_city"] = city_by_id[o["hq_city_id"]]["name"]
            o["founder"] = person_by_id[o["founder_id"]]["name"]
        works = [dict(r) for r in db.execute("SELECT * FROM works")]
        for w in works:
            w["creator"] = person_by_id[w["creator_id"]]["name"]
        db.close()
        world.cities = {c["name"]: c for c in city_by_id.values()}
        world.people = {p["name"]: p for p in person_by_id.values()}
        world.orgs = {o["name"]: o for o in org_by_id.values()}
        world.works = {w["title"]: w for w in works}
        world._render_all()
        return world

    @property
    def num_facts(self) -> int:
        """Attribute values stated by the database (ids excluded)."""
        return 4 * len(self.cities) + 4 * len(self.people) + sum(p["employer"] is not None for p in self.people.values()) \
            + 4 * len(self.orgs) + 3 * len(self.works)

    def url(self, section: str, name: str) -> str:
        return f"https://{self.host}/{section}/{slug(name)}"

    # -- rendering -------------------------------------------------------------------
    def _render_all(self) -> None:
        for c in self.cities.values():
            born = sorted(p["name"] for p in self.people.values() if p["birth_city"] == c["name"])
            text = [f"{c['name']} is a city in {c['country']}.", f"{c['name']} was founded in {c['founded']}.",
                    f"{c['name']} has a population of {c['population']:,}."]
            if born:
                text.append(f"People born in {c['name']}: {', '.join(born)}.")
            self._add("city", c["name"], text, "its history, population and notable people")
        for p in self.people.values():
            text = [f"{p['name']} was born in {p['birth_year']}.", f"{p['name']} was born in the city of {p['birth_city']}.",
                    f"{p['name']} works as {_a(p['occupation'])}."]
            if p["employer"]:
                text.append(f"{p['name']} works for {p['employer']}.")
            text += [f"{p['name']} founded {o['name']} in {o['founded']}." for o in self.orgs.values() if o["founder"] == p["name"]]
            text += [f"{p['name']} created the {w['kind']} {w['title']} in {w['year']}." for w in self.works.values() if w["creator"] == p["name"]]
            self._add("person", p["name"], text, "early life, career and notable works")
        for o in self.orgs.values():
            staff = sorted(p["name"] for p in self.people.values() if p["employer"] == o["name"])
            text = [f"{o['name']} is {_a(o['kind'])}.", f"{o['name']} was founded in {o['founded']}.",
                    f"{o['name']} was founded by {o['founder']}.", f"{o['name']} is headquartered in {o['hq_city']}.",
                    f"{o['name']} has {len(staff)} employees" + (f": {', '.join(staff)}." if staff else ".")]
            self._add("organization", o["name"], text, "its founding, headquarters and staff")
        for w in self.works.values():
            text = [f"{w['title']} is {_a(w['kind'])}.", f"{w['title']} was created by {w['creator']}.",
                    f"{w['title']} was released in {w['year']}."]
            self._add("work", w["title"], text, "its creator, release and reception")

    def _add(self, kind: str, name: str, sentences: list[str], covers: str) -> None:
        url = self.url(kind, name)
        day = int(unit_hash(0, url) * 3000)
        date = f"{2015 + day // 365:04d}-{1 + day % 365 // 31 % 12:02d}-{1 + day % 28:02d}"
        teaser = f"{name}: an encyclopedia article on this {kind}, covering {covers}..."
        self.pages[url] = Page(url, name, kind, f"{name}\n\n" + "\n".join(sentences), teaser, date)

    # -- the tools -------------------------------------------------------------------
    def search(self, query: str, k: int = 5) -> str:
        """Numbered results for ``query`` (BM25 over page texts), snippets that tease."""
        # Imported here: the search package loads the MCP SDK, which the world itself never needs.
        from agentworld.envs.search.tools import format_hits

        hits = self._index().search(query, k)
        return format_hits(hits) if hits else f"No results found for: {query}"

    def extract(self, url: str) -> str:
        page = self.pages.get(url.strip())
        return page.text if page else f"Error: could not fetch {url}: 404 Not Found"

    def _index(self) -> _Index:
        if not hasattr(self, "_bm25"):
            self._bm25 = _Index(list(self.pages.values()))
        return self._bm25

    # -- consistency -----------------------------------------------------------------
    def check_text(self, text: str) -> list[Conflict]:
        """Facts stated in ``text`` that contradict the database, one per bad sentence."""
        found: list[Conflict] = []
        for sentence in _SENTENCE.split(text):
            found.extend(self._check_sentence(sentence))
        return found

    def _mentions(self, sentence: str, table: dict[str, dict]) -> list[str]:
        names = [n for n in table if n in sentence]
        # Drop names contained in longer mentioned names ("Vel" inside "Vel Ardor").
        return [n for n in names if not any(n != m and n in m for m in names)]

    def _check_sentence(self, s: str) -> list[Conflict]:
        people, cities, orgs, works = (self._mentions(s, t) for t in (self.people, self.cities, self.orgs, self.works))
        years = [int(y) for y in _YEAR.findall(s)]
        out: list[Conflict] = []

        def bad(key: str, expected: object, field_: str) -> None:
            out.append(Conflict(kind="world_fact", key=f"{key}.{field_}", expected=str(expected), detail=s.strip()[:200]))

        low = s.lower()
        if "born" in low and len(people) == 1 and not orgs and not works:
            p = self.people[people[0]]
            if years and p["birth_year"] not in years:
                bad(p["name"], p["birth_year"], "birth_year")
            if cities and p["birth_city"] not in cities:
                bad(p["name"], p["birth_city"], "birth_city")
        if "founded by" in low and len(orgs) == 1 and people and self.orgs[orgs[0]]["founder"] not in people:
            bad(orgs[0], self.orgs[orgs[0]]["founder"], "founder")
        if "founded" in low and years and len(orgs) == 1 and self.orgs[orgs[0]]["founded"] not in years:
            bad(orgs[0], self.orgs[orgs[0]]["founded"], "founded")
        elif "founded" in low and years and not orgs and len(cities) == 1 and self.cities[cities[0]]["founded"] not in years:
            bad(cities[0], self.cities[cities[0]]["founded"], "founded")
        if "headquartered" in low and len(orgs) == 1 and cities and self.orgs[orgs[0]]["hq_city"] not in cities:
            bad(orgs[0], self.orgs[orgs[0]]["hq_city"], "hq_city")
        if "population" in low and len(cities) == 1:
            numbers = [int(n.replace(",", "")) for n in _NUMBER.findall(s)]
            if numbers and self.cities[cities[0]]["population"] not in numbers:
                bad(cities[0], self.cities[cities[0]]["population"], "population")
        if "works for" in low and len(people) == 1 and orgs and self.people[people[0]]["employer"] not in orgs:
            bad(people[0], self.people[people[0]]["employer"], "employer")
        if len(works) == 1:
            w = self.works[works[0]]
            if ("created by" in low or "written by" in low) and people and w["creator"] not in people:
                bad(w["title"], w["creator"], "creator")
            if ("released" in low or "created" in low) and years and w["year"] not in years:
                bad(w["title"], w["year"], "year")
        return out


class _Index:
    """BM25 over page texts (title weighted twice)."""

    def __init__(self, pages: list[Page]):
        import bm25s

        self.pages = pages
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize([f"{p.title} {p.title} {p.text}" for p in pages], show_progress=False), show_progress=False)
        self._bm25s = bm25s

    def search(self, query: str, k: int) -> list[Page]:
        tokens = self._bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        hits, scores = self.retriever.retrieve(tokens, k=min(k, len(self.pages)), show_progress=False)
        return [self.pages[int(i)] for i, s in zip(hits[0], scores[0], strict=True) if s > 0]
