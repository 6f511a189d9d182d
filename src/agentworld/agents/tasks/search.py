"""Search tasks over a fictional world (``fictional-search-v1`` for real, ``sim-v1`` simulated).

Questions are written backwards from database rows: pick an entity, ask for one of its
attributes (or a two-hop or list relation), and take the answer from SQL over the
world's database. The agent answers with ``submit_answer``; the grade compares the last
submitted answer with the database's by exact match (success) and item F1 (reward), in
the real environment and the simulator alike (``decided_by: world_db``). Search snippets
only tease (:mod:`agentworld.sim.worlds.pages`); :func:`leaks` tells whether a task's
answer could be read off the snippets without extracting a page.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.agents.tasks.base import AgentTask, CheckResult, FamilyRegistry, Grade, JudgeFn, TaskContext
from agentworld.envs.base import Env
from agentworld.records.trajectory import Trajectory
from agentworld.sim.scenario import Scenario
from agentworld.sim.worlds import FictionalWorld, Question, item_f1, world_check, world_scenario
from agentworld.tool_calls import ToolCallError, parse_tool_call

FAMILIES = FamilyRegistry()


@dataclass
class SearchAgentTask(AgentTask):
    domain: str = "search"
    question: Question | None = None
    world: str = ""

    @property
    def answers(self) -> list[str]:
        assert self.question is not None
        return self.question.answers

    def scenario(self) -> Scenario:
        assert self.question is not None
        return world_scenario(FictionalWorld.load(self.world), self.question).model_copy(
            update={"id": self.id, "first_observation": self.instruction, "max_turns": self.max_turns})

    def sim_checks(self) -> list[Callable[[str, str], list[Any]]]:
        return [world_check(FictionalWorld.load(self.world))]

    def is_final(self, action: str) -> bool:
        return submitted(action) is not None

    def grade(self, env: Env, trajectory: Trajectory, *, judge: JudgeFn | None = None) -> Grade:
        answer = next((a for t in reversed(trajectory.turns) if (a := submitted(t.action)) is not None), None)
        f1 = item_f1(answer or [], self.answers)
        exact = answer is not None and _norm(answer) == _norm(self.answers)
        return Grade((CheckResult("exact match", exact, "world_db",
                                  detail=f"submitted {answer!r}, expected {self.answers!r}"),), reward_override=f1)


def _norm(items: list[str]) -> set[str]:
    return {" ".join(str(x).lower().split()).rstrip(".") for x in items}


def submitted(action: str) -> list[str] | None:
    """The answer items of a ``submit_answer`` call (``;`` separates items in a string), else None."""
    try:
        name, args = parse_tool_call(action)
    except ToolCallError:
        return None
    if name != "submit_answer":
        return None
    ans = args.get("answer", "")
    return [str(a) for a in ans] if isinstance(ans, list) else [a.strip() for a in str(ans).split(";") if a.strip()]


def leaks(task: SearchAgentTask, world: FictionalWorld, *, queries: list[str] | None = None) -> list[str]:
    """Snippets that give the answer away: a snippet stating the answer next to the question's
    subject, or any snippet with a numeric answer. Searches the question itself and each
    subject it names (``queries`` adds more)."""
    assert task.question is not None
    subjects = task.question.evidence[:1]
    found = []
    for q in [task.question.text, *subjects, *(queries or [])]:
        for page in world._index().search(q, 10):
            snip = page.snippet
            for ans in task.answers:
                if ans in snip and (ans.isdigit() or any(s in snip for s in subjects if s != ans)):
                    found.append(f"{q!r}: {page.url}: {snip}")
    return found


def _call(name: str, **arguments: Any) -> str:
    import json

    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _world(ctx: TaskContext) -> Path:
    if not ctx.world:
        raise ValueError("search tasks ask about a fictional world: pass its database "
                         "(build one with: agentworld sim world build --out world.sqlite)")
    path = Path(ctx.world)
    if not path.exists():
        raise FileNotFoundError(f"world database not found: {path}")
    return path


def _make(family: str, seed: int, ctx: TaskContext, rng: random.Random, pick_sql: str,
          ask: Callable[[tuple], tuple[str, str, tuple, list[str]]], kind: str) -> AgentTask:
    """``pick_sql`` lists candidate rows; ``ask(row)`` gives (question, answer SQL, params, evidence)."""
    path = _world(ctx)
    db = sqlite3.connect(path)
    try:
        rows = db.execute(pick_sql).fetchall()
        if not rows:
            raise ValueError(f"world {path} has no rows for the {family} family")
        row = rng.choice(rows)
        text, sql, params, evidence = ask(row)
        answers = [str(r[0]) for r in db.execute(sql, params).fetchall()]
    finally:
        db.close()
    question = Question(f"{family}-{seed}", text, sql, params, answers, kind, evidence)
    world = FictionalWorld.load(path)
    urls = [p.url for p in world.pages.values() if p.title in evidence]
    solution = [_call("web_search", query=evidence[0]), *(_call("web_extractor", url=u) for u in urls[:3]),
                _call("submit_answer", answer=answers if len(answers) > 1 else answers[0])]
    instruction = f"{text} Give the answer with the submit_answer tool."
    return SearchAgentTask(family=family, seed=seed, instruction=instruction, env_id="fictional-search-v1",
                           env_kwargs={"world": str(path), "questions": [question]},
                           reset_options={"question": question.id}, solution=solution, question=question,
                           world=str(path), max_turns=10)


@FAMILIES.add("search-birth-year", "search")
def _birth_year(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-birth-year", seed, ctx, rng, "SELECT name FROM people ORDER BY id",
                 lambda r: (f"In what year was {r[0]} born?", "SELECT birth_year FROM people WHERE name = ?", (r[0],), [r[0]]),
                 "attribute")


@FAMILIES.add("search-birth-city", "search")
def _birth_city(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-birth-city", seed, ctx, rng, "SELECT name FROM people ORDER BY id",
                 lambda r: (f"In which city was {r[0]} born?", "SELECT c.name FROM people p JOIN cities c "
                            "ON p.birth_city_id = c.id WHERE p.name = ?", (r[0],), [r[0]]), "attribute")


@FAMILIES.add("search-occupation", "search")
def _occupation(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-occupation", seed, ctx, rng, "SELECT name FROM people ORDER BY id",
                 lambda r: (f"What is the occupation of {r[0]}?", "SELECT occupation FROM people WHERE name = ?",
                            (r[0],), [r[0]]), "attribute")


@FAMILIES.add("search-org-hq", "search")
def _org_hq(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-org-hq", seed, ctx, rng, "SELECT name FROM organizations ORDER BY id",
                 lambda r: (f"In which city is {r[0]} headquartered?", "SELECT c.name FROM organizations o JOIN cities c "
                            "ON o.hq_city_id = c.id WHERE o.name = ?", (r[0],), [r[0]]), "attribute")


@FAMILIES.add("search-org-founded", "search")
def _org_founded(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-org-founded", seed, ctx, rng, "SELECT name FROM organizations ORDER BY id",
                 lambda r: (f"In what year was {r[0]} founded?", "SELECT founded FROM organizations WHERE name = ?",
                            (r[0],), [r[0]]), "attribute")


@FAMILIES.add("search-city-country", "search")
def _city_country(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-city-country", seed, ctx, rng, "SELECT name FROM cities ORDER BY id",
                 lambda r: (f"In which country is the city of {r[0]}?", "SELECT k.name FROM cities c JOIN countries k "
                            "ON c.country_id = k.id WHERE c.name = ?", (r[0],), [r[0]]), "attribute")


@FAMILIES.add("search-founder-birthplace", "search")
def _founder_birthplace(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-founder-birthplace", seed, ctx, rng,
                 "SELECT o.name, p.name FROM organizations o JOIN people p ON o.founder_id = p.id ORDER BY o.id",
                 lambda r: (f"In which city was the founder of {r[0]} born?", "SELECT c.name FROM organizations o JOIN "
                            "people p ON o.founder_id = p.id JOIN cities c ON p.birth_city_id = c.id WHERE o.name = ?",
                            (r[0],), [r[0], r[1]]), "two-hop")


@FAMILIES.add("search-creator-birth-year", "search")
def _creator_birth(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-creator-birth-year", seed, ctx, rng,
                 "SELECT w.title, w.kind, p.name FROM works w JOIN people p ON w.creator_id = p.id ORDER BY w.id",
                 lambda r: (f"In what year was the creator of the {r[1]} {r[0]} born?", "SELECT p.birth_year FROM works w "
                            "JOIN people p ON w.creator_id = p.id WHERE w.title = ?", (r[0],), [r[0], r[2]]), "two-hop")


@FAMILIES.add("search-works-by", "search")
def _works_by(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-works-by", seed, ctx, rng,
                 "SELECT DISTINCT p.name FROM works w JOIN people p ON w.creator_id = p.id ORDER BY p.id",
                 lambda r: (f"List every work created by {r[0]}.", "SELECT w.title FROM works w JOIN people p "
                            "ON w.creator_id = p.id WHERE p.name = ? ORDER BY w.title", (r[0],), [r[0]]), "list")


@FAMILIES.add("search-employees", "search")
def _employees(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    return _make("search-employees", seed, ctx, rng,
                 "SELECT o.name FROM organizations o JOIN people p ON p.employer_id = o.id GROUP BY o.id "
                 "HAVING COUNT(*) BETWEEN 1 AND 6 ORDER BY o.id",
                 lambda r: (f"List everyone who works for {r[0]}.", "SELECT p.name FROM people p JOIN organizations o "
                            "ON p.employer_id = o.id WHERE o.name = ? ORDER BY p.name", (r[0],), [r[0]]), "list")
