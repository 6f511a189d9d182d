"""Fictional worlds: a seeded SQLite database of invented, mutually consistent facts.

Real search environments cannot give questions whose answers no model memorised; an
invented world can. Cities, people, organizations and works are generated from a seed
with consistency constraints (nobody founds anything before turning 20, works come after
their creator turned 18...). Questions are written backwards: pick an answer row first,
then describe it through its relations, keeping only descriptions that SQL confirms
pick out exactly that answer.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentworld.seeding import keyed_rng

SCHEMA = """
CREATE TABLE countries (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE cities (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, country_id INTEGER NOT NULL REFERENCES countries(id),
                     founded INTEGER NOT NULL, population INTEGER NOT NULL);
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, birth_year INTEGER NOT NULL,
                     birth_city_id INTEGER NOT NULL REFERENCES cities(id), occupation TEXT NOT NULL,
                     employer_id INTEGER REFERENCES organizations(id));
CREATE TABLE organizations (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, kind TEXT NOT NULL, founded INTEGER NOT NULL,
                            hq_city_id INTEGER NOT NULL REFERENCES cities(id), founder_id INTEGER NOT NULL REFERENCES people(id));
CREATE TABLE works (id INTEGER PRIMARY KEY, title TEXT UNIQUE NOT NULL, kind TEXT NOT NULL, year INTEGER NOT NULL,
                    creator_id INTEGER NOT NULL REFERENCES people(id));
"""
_ONSETS = ["b", "d", "k", "l", "m", "n", "r", "s", "t", "v", "z", "th", "br", "dr", "kel", "mor", "qu", "sh"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "ia", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "nd", "rk"]
_OCCUPATIONS = ["cartographer", "glassblower", "astronomer", "engineer", "composer", "botanist", "archivist", "shipwright", "physician", "poet"]
_ORG_KINDS = ["foundry", "observatory", "trading company", "conservatory", "shipyard", "press", "academy", "guild"]
_WORK_KINDS = ["novel", "symphony", "atlas", "treatise", "opera", "poem cycle"]
_WORDS = ["Silent", "Amber", "Hollow", "Northern", "Glass", "Crimson", "Drifting", "Iron", "Pale", "Seventh", "Winter", "Lantern", "Tide", "Harbor", "Orchard", "Comet"]


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)).capitalize()


def _unique(rng: random.Random, seen: set[str], make) -> str:
    while True:
        name = make(rng)
        if name not in seen:
            seen.add(name)
            return name


@dataclass(frozen=True)
class WorldSize:
    countries: int = 6
    cities: int = 24
    people: int = 80
    organizations: int = 30
    works: int = 60


def build_world(path: str | Path, *, seed: int, size: WorldSize = WorldSize()) -> Path:
    """Write a fresh world database to ``path`` (overwriting it) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    rng = keyed_rng(seed, "fictional-world")
    seen: set[str] = set()
    db = sqlite3.connect(path)
    with db:
        db.executescript(SCHEMA)
        for i in range(1, size.countries + 1):
            db.execute("INSERT INTO countries VALUES (?, ?)", (i, _unique(rng, seen, lambda r: _word(r, 2) + "ia")))
        for i in range(1, size.cities + 1):
            db.execute(
                "INSERT INTO cities VALUES (?, ?, ?, ?, ?)",
                (i, _unique(rng, seen, lambda r: _word(r, 2)), rng.randint(1, size.countries), rng.randint(800, 1850), rng.randint(8, 900) * 1000 + rng.randint(0, 999)),
            )
        people = []
        for i in range(1, size.people + 1):
            birth = rng.randint(1890, 1985)
            people.append(birth)
            db.execute(
                "INSERT INTO people VALUES (?, ?, ?, ?, ?, NULL)",
                (i, _unique(rng, seen, lambda r: f"{_word(r, 1)} {_word(r, 2)}"), birth, rng.randint(1, size.cities), rng.choice(_OCCUPATIONS)),
            )
        orgs = []
        for i in range(1, size.organizations + 1):
            founder = rng.randint(1, size.people)
            founded = rng.randint(people[founder - 1] + 20, min(2015, people[founder - 1] + 70))
            orgs.append(founded)
            kind = rng.choice(_ORG_KINDS)
            name = _unique(rng, seen, lambda r, k=kind: f"{_word(r, 2)} {k.title()}")
            db.execute("INSERT INTO organizations VALUES (?, ?, ?, ?, ?, ?)", (i, name, kind, founded, rng.randint(1, size.cities), founder))
        for pid in range(1, size.people + 1):
            # Employment only where the organization existed in the person's working life.
            options = [o for o in range(1, size.organizations + 1) if orgs[o - 1] <= people[pid - 1] + 60]
            if options and rng.random() < 0.75:
                db.execute("UPDATE people SET employer_id = ? WHERE id = ?", (rng.choice(options), pid))
        for i in range(1, size.works + 1):
            creator = rng.randint(1, size.people)
            kind = rng.choice(_WORK_KINDS)
            title = _unique(rng, seen, lambda r: f"The {r.choice(_WORDS)} {_word(r, 2)}")
            db.execute("INSERT INTO works VALUES (?, ?, ?, ?, ?)", (i, title, kind, rng.randint(people[creator - 1] + 18, people[creator - 1] + 75), creator))
    db.close()
    return path


@dataclass
class Question:
    """A question written backwards from its answer; ``sql`` re-derives the answer."""

    id: str
    text: str
    sql: str
    params: tuple
    answers: list[str]
    kind: str
    evidence: list[str] = field(default_factory=list)
    """Page titles the answer can be read from."""


def _one(db: sqlite3.Connection, sql: str, params: tuple) -> list[str]:
    return [str(r[0]) for r in db.execute(sql, params).fetchall()]


def write_questions(db_path: str | Path, *, seed: int, count: int = 20) -> list[Question]:
    """Seeded questions whose answers come from SQL; only unambiguous ones are kept."""
    db = sqlite3.connect(db_path)
    rng = keyed_rng(seed, "questions")
    out: list[Question] = []
    makers = [_founder_birthplace, _org_by_city_and_year, _work_creator_birth, _orgs_by_birth_city, _employee_count]
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        q = makers[attempts % len(makers)](db, rng, f"q{len(out) + 1}")
        if q is not None and q.answers and not any(q.text == o.text for o in out):
            out.append(q)
    db.close()
    return out


def _founder_birthplace(db, rng, qid):
    org_id, org = rng.choice(db.execute("SELECT id, name FROM organizations").fetchall())
    sql = ("SELECT c.name FROM organizations o JOIN people p ON o.founder_id = p.id "
           "JOIN cities c ON p.birth_city_id = c.id WHERE o.name = ?")
    founder = _one(db, "SELECT p.name FROM organizations o JOIN people p ON o.founder_id = p.id WHERE o.id = ?", (org_id,))[0]
    return Question(qid, f"In which city was the founder of {org} born?", sql, (org,), _one(db, sql, (org,)), "two-hop", [org, founder])


def _org_by_city_and_year(db, rng, qid):
    name, kind, founded, city = rng.choice(db.execute(
        "SELECT o.name, o.kind, o.founded, c.name FROM organizations o JOIN cities c ON o.hq_city_id = c.id").fetchall())
    sql = ("SELECT o.name FROM organizations o JOIN cities c ON o.hq_city_id = c.id "
           "WHERE o.kind = ? AND o.founded = ? AND c.name = ?")
    answers = _one(db, sql, (kind, founded, city))
    if answers != [name]:
        return None
    return Question(qid, f"Which {kind} headquartered in {city} was founded in {founded}?", sql, (kind, founded, city), answers, "constraints", [name])


def _work_creator_birth(db, rng, qid):
    title, kind, creator = rng.choice(db.execute(
        "SELECT w.title, w.kind, p.name FROM works w JOIN people p ON w.creator_id = p.id").fetchall())
    sql = "SELECT p.birth_year FROM works w JOIN people p ON w.creator_id = p.id WHERE w.title = ?"
    return Question(qid, f"In what year was the creator of the {kind} {title} born?", sql, (title,), _one(db, sql, (title,)), "two-hop", [title, creator])


def _orgs_by_birth_city(db, rng, qid):
    (city,) = rng.choice(db.execute(
        "SELECT DISTINCT c.name FROM organizations o JOIN people p ON o.founder_id = p.id JOIN cities c ON p.birth_city_id = c.id").fetchall())
    sql = ("SELECT o.name FROM organizations o JOIN people p ON o.founder_id = p.id JOIN cities c ON p.birth_city_id = c.id "
           "WHERE c.name = ? ORDER BY o.name")
    answers = _one(db, sql, (city,))
    return Question(qid, f"List every organization founded by someone born in {city}.", sql, (city,), answers, "list", [city, *answers])


def _employee_count(db, rng, qid):
    org, kind = rng.choice(db.execute("SELECT name, kind FROM organizations").fetchall())
    sql = "SELECT COUNT(*) FROM people p JOIN organizations o ON p.employer_id = o.id WHERE o.name = ?"
    return Question(qid, f"How many people work for the {kind} {org}?", sql, (org,), _one(db, sql, (org,)), "aggregate", [org])


def questions_path(world: str | Path) -> Path:
    """Where a world's questions live: next to its database, ``<name>.questions.jsonl``."""
    return Path(world).with_suffix(".questions.jsonl")


def save_questions(world: str | Path, questions: list[Question]) -> Path:
    path = questions_path(world)
    path.write_text("".join(json.dumps(asdict(q), ensure_ascii=False) + "\n" for q in questions), encoding="utf-8")
    return path


def load_questions(world: str | Path) -> list[Question]:
    """The questions saved next to ``world`` (FileNotFoundError naming the file when absent)."""
    path = questions_path(world)
    if not path.exists():
        raise FileNotFoundError(f"questions file not found: {path}")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Question(**{**r, "params": tuple(r["params"])}) for r in rows]

