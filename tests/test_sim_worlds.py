"""Fictional worlds: seeded consistent facts, SQL-derived questions, teasing search, fact checks."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from agentworld.envs import record_episode
from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import write_trajectories
from agentworld.sim import SimEnv
from agentworld.sim.worlds import (
    FictionalSearchEnv,
    FictionalWorld,
    build_world,
    item_f1,
    world_check,
    world_scenario,
    write_questions,
)


@pytest.fixture(scope="module")
def world_db(tmp_path_factory) -> Path:
    return build_world(tmp_path_factory.mktemp("world") / "w.sqlite", seed=5)


@pytest.fixture(scope="module")
def world(world_db) -> FictionalWorld:
    return FictionalWorld.load(world_db)


def _dump(path: Path) -> list[tuple]:
    db = sqlite3.connect(path)
    rows = [r for t in ("countries", "cities", "people", "organizations", "works") for r in db.execute(f"SELECT * FROM {t}")]
    db.close()
    return rows


def test_worlds_are_seeded(tmp_path: Path, world_db: Path):
    assert _dump(build_world(tmp_path / "again.sqlite", seed=5)) == _dump(world_db)
    assert _dump(build_world(tmp_path / "other.sqlite", seed=6)) != _dump(world_db)


def test_several_hundred_facts_that_agree_with_each_other(world_db: Path, world: FictionalWorld):
    assert 300 <= world.num_facts <= 1000
    db = sqlite3.connect(world_db)
    q = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    assert q("SELECT COUNT(*) FROM organizations o JOIN people p ON o.founder_id = p.id WHERE o.founded < p.birth_year + 20") == 0
    assert q("SELECT COUNT(*) FROM works w JOIN people p ON w.creator_id = p.id WHERE w.year < p.birth_year + 18") == 0
    assert q("SELECT COUNT(*) FROM people p JOIN organizations o ON p.employer_id = o.id WHERE o.founded > p.birth_year + 60") == 0
    names = [r[0] for r in db.execute("SELECT name FROM cities UNION ALL SELECT name FROM people UNION ALL SELECT name FROM organizations")]
    assert len(names) == len(set(names))


def test_questions_are_answered_by_their_sql(world_db: Path):
    qs = write_questions(world_db, seed=5, count=15)
    assert len(qs) == 15 and len({q.kind for q in qs}) >= 4
    db = sqlite3.connect(world_db)
    for q in qs:
        assert [str(r[0]) for r in db.execute(q.sql, q.params)] == q.answers and q.answers
    assert write_questions(world_db, seed=5, count=15)[0].text == qs[0].text


def test_snippets_tease_but_never_state_a_value(world: FictionalWorld):
    others = set(world.people) | set(world.cities) | set(world.orgs) | set(world.works)
    for page in world.pages.values():
        assert not re.search(r"\d", page.teaser)
        assert not [n for n in others if n in page.teaser and n not in page.title]
    org = next(iter(world.orgs))
    results = world.search(f"{org} founded headquartered")
    assert world.url("organization", org) in results.split("\n\n")[0]
    assert str(world.orgs[org]["founded"]) not in results and world.orgs[org]["hq_city"] not in results.replace(org, "")


def test_rendered_pages_pass_the_check_and_corrupted_ones_do_not(world: FictionalWorld):
    assert all(world.check_text(p.text) == [] for p in world.pages.values())
    person = next(p for p in world.people.values() if p["employer"])
    page = world.extract(world.url("person", person["name"]))
    wrong_year = page.replace(f"born in {person['birth_year']}", f"born in {person['birth_year'] + 3}")
    other_city = next(c for c in world.cities if c != person["birth_city"])
    wrong_city = page.replace(f"city of {person['birth_city']}", f"city of {other_city}")
    assert [c.key for c in world.check_text(wrong_year)] == [f"{person['name']}.birth_year"]
    assert [c.key for c in world.check_text(wrong_city)] == [f"{person['name']}.birth_city"]
    org = next(iter(world.orgs.values()))
    liar = next(p for p in world.people if p != org["founder"])
    assert [c.key for c in world.check_text(f"{org['name']} was founded by {liar}.")] == [f"{org['name']}.founder"]


def test_real_search_env_answers_from_the_database(world_db: Path, world: FictionalWorld):
    qs = write_questions(world_db, seed=5, count=5)
    env = FictionalSearchEnv(world, qs)
    obs, info = env.reset(seed=0)
    assert obs == qs[0].text and {t["name"] for t in info["tools"]} >= {"web_search", "web_extractor", "dict_memory"}
    assert env.step(json.dumps({"name": "web_extractor", "arguments": {"url": "https://nowhere.fict/x"}})).observation.startswith("Error")
    env.step(json.dumps({"name": "dict_memory", "arguments": {"op": "add", "key": "k", "value": "v"}}))
    assert env.step(json.dumps({"name": "dict_memory", "arguments": {"op": "get", "key": "k"}})).observation == "v"
    done = env.step(json.dumps({"name": "submit_answer", "arguments": {"answer": qs[0].answers}}))
    assert done.terminated and done.reward == 1.0
    assert item_f1(["a", "b"], ["a", "c"]) == 0.5 and item_f1([], ["a"]) == 0.0


def test_simulated_pages_are_checked_against_the_world(tmp_path: Path, world_db: Path, world: FictionalWorld):
    qs = write_questions(world_db, seed=5, count=3)
    person = next(iter(world.people.values()))
    url = world.url("person", person["name"])
    extract = json.dumps({"name": "web_extractor", "arguments": {"url": url}})
    # A recorded episode whose page was corrupted: the world model will repeat the lie.
    traj = record_episode(FictionalSearchEnv(world, qs), [extract], trajectory_id="w1")
    traj.turns[0].observation = traj.turns[0].observation.replace(str(person["birth_year"]), str(person["birth_year"] - 5))
    write_trajectories(tmp_path / "lies.jsonl", [traj])
    wm = WorldModel(load_backend("retrieval", source=tmp_path / "lies.jsonl", domain="search"))
    for q in qs:  # the hidden summary holds every answer the simulator must stay consistent with
        assert all(a in world_scenario(world, q).hidden_summary for a in q.answers)
    sc = world_scenario(world, qs[0])
    env = SimEnv(wm, sc, checks=[world_check(world)])
    env.reset()
    step = env.step(extract)
    assert [c["key"] for c in step.info["ledger_conflicts"]] == [f"{person['name']}.birth_year"]
