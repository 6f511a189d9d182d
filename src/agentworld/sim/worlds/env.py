"""A fictional world as a real search environment, and as a scenario for the simulator.

:class:`FictionalSearchEnv` answers ``web_search``/``web_extractor``/``dict_memory`` from
the world's database exactly (ground truth for drift and tests) and grades a
``submit_answer`` call by item-level F1. :func:`world_scenario` turns a question into a
:class:`~agentworld.sim.Scenario` whose hidden summary holds the facts a world model
needs to simulate the same pages; pair it with ``checks=[world_check(world)]`` so every
simulated page is checked against the database.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.records.trajectory import SimContext
from agentworld.sim.ledger import Conflict, parse_tool_call
from agentworld.sim.scenario import Scenario
from agentworld.sim.worlds.build import Question, load_questions, questions_path
from agentworld.sim.worlds.pages import FictionalWorld

TOOLS: list[dict[str, Any]] = [
    {"name": "web_search", "description": "Search the web.",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "queries": {"type": "array", "items": {"type": "string"}}}}},
    {"name": "web_extractor", "description": "Fetch the readable text of a page.",
     "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}},
    {"name": "dict_memory", "description": "A key-value notebook.",
     "inputSchema": {"type": "object", "properties": {"op": {"enum": ["add", "update", "get", "remove", "list"]}, "key": {"type": "string"}, "value": {"type": "string"}}, "required": ["op"]}},
    {"name": "submit_answer", "description": "Submit the final answer (a list of items for list questions).",
     "inputSchema": {"type": "object", "properties": {"answer": {"type": ["string", "array"]}}, "required": ["answer"]}},
]
SIMULATION_INSTRUCTION = (
    "Search results tease: each snippet names what the page covers but never states a fact or "
    "value, so the agent must extract pages. Extracted pages state one fact per sentence and "
    "must agree with the hidden facts exactly; entities absent from them do not exist "
    "(searches find nothing, unknown URLs give 404)."
)


def item_f1(predicted: list[str], gold: list[str]) -> float:
    """Item-level F1 between answer lists (case- and space-insensitive)."""
    norm = lambda xs: {" ".join(str(x).lower().split()) for x in xs}  # noqa: E731
    p, g = norm(predicted), norm(gold)
    if not p or not g:
        return float(p == g)
    tp = len(p & g)
    return 0.0 if tp == 0 else 2 * tp / (len(p) + len(g))


class FictionalSearchEnv(Env):
    """The search domain over a fictional world, answered from its database.

    Registered as ``fictional-search-v1``: ``world`` is a :class:`FictionalWorld` or the
    path of its database; ``questions`` default to the ones saved next to it, and
    ``question`` (an id) keeps only that one. ``reset(seed=s)`` picks question
    ``s % len(questions)``, ``options={"question": id}`` a given one.
    """

    domain = "search"
    deterministic_reset = True

    def __init__(self, world: FictionalWorld | str | Path | None = None, questions: list[Question] | None = None,
                 *, question: str | None = None):
        if world is None:
            raise ValueError("a fictional search environment needs a world database "
                             "(build one with: agentworld sim world build --out world.sqlite)")
        if not isinstance(world, FictionalWorld):
            world = FictionalWorld.load(world)
        if questions is None:
            questions = load_questions(world.path)
        if question is not None:
            questions = [q for q in questions if q.id == question]
            if not questions:
                raise ValueError(f"no question {question!r} in {questions_path(world.path)} "
                                 "(list them with: agentworld sim world show)")
        if not questions:
            raise ValueError("a fictional search environment needs at least one question")
        self.world, self.questions = world, questions
        self.question = questions[0]
        self.memory: dict[str, str] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        options = options or {}
        if "question" in options:
            found = [q for q in self.questions if q.id == options["question"]]
            if not found:
                raise ValueError(f"unknown question {options['question']!r} (known: {', '.join(q.id for q in self.questions)})")
            self.question = found[0]
        elif seed is not None:
            self.question = self.questions[seed % len(self.questions)]
        self.memory = {}
        return Reset(self.question.text, {"question_id": self.question.id, "tools": TOOLS})

    def step(self, action: str) -> Step:
        call = parse_tool_call(action)
        if call is None:
            return Step('Error: the action must be a JSON tool call {"name": ..., "arguments": {...}}', 0.0, False, False, {})
        name, args = call
        if name == "web_search":
            queries = args.get("queries") or [args.get("query", "")]
            if len(queries) == 1:
                return Step(self.world.search(str(queries[0])), 0.0, False, False, {})
            return Step("\n\n".join(f"Results for: {q}\n{self.world.search(str(q))}" for q in queries), 0.0, False, False, {})
        if name == "web_extractor":
            return Step(self.world.extract(str(args.get("url", ""))), 0.0, False, False, {})
        if name == "dict_memory":
            return Step(self._memory(args), 0.0, False, False, {})
        if name == "submit_answer":
            answer = args.get("answer", [])
            items = answer if isinstance(answer, list) else [a.strip() for a in str(answer).split(";")]
            f1 = item_f1(items, self.question.answers)
            return Step(f"Answer recorded. Item F1: {f1:.2f}", f1, True, False, {"f1": f1})
        return Step(f"Error: unknown tool {name!r}", 0.0, False, False, {})

    def _memory(self, args: dict[str, Any]) -> str:
        op, key = args.get("op"), str(args.get("key", ""))
        if op in ("add", "update"):
            self.memory[key] = str(args.get("value", ""))
            return f"stored {key}"
        if op == "get":
            return self.memory.get(key, f"no entry for {key}")
        if op == "remove":
            return f"removed {key}" if self.memory.pop(key, None) is not None else f"no entry for {key}"
        return json.dumps(self.memory, ensure_ascii=False)

    def context(self) -> SimContext:
        return SimContext(task_description=self.question.text, tools=TOOLS)

    def sim_scenario(self, first_observation: str) -> Scenario:
        """The scenario a simulator needs to play this episode (the question's hidden facts)."""
        return world_scenario(self.world, self.question).model_copy(
            update={"first_observation": first_observation, "max_turns": 10**6})

    def sim_checks(self) -> list[Callable[[str, str], list[Conflict]]]:
        """Checks of simulated observations against this world's database."""
        return [world_check(self.world)]


def world_scenario(world: FictionalWorld, question: Question, *, max_pages: int = 12) -> Scenario:
    """A simulator scenario for ``question``: the pages near its evidence, as hidden facts."""
    related: list[str] = []
    for title in question.evidence:
        for page in world.pages.values():
            if (page.title == title or title in page.text) and page.url not in related:
                related.append(page.url)
    hidden = "\n\n".join(f"{url}\n{world.pages[url].text}" for url in related[:max_pages])
    return Scenario(
        id=f"{world.path.stem}/{question.id}", domain="search", task=question.text, tools=TOOLS,
        hidden_summary=hidden, simulation_instruction=SIMULATION_INSTRUCTION,
        success_state="the agent submits the answer: " + "; ".join(question.answers),
    )


def world_check(world: FictionalWorld) -> Callable[[str, str], list[Conflict]]:
    """A SimEnv check: simulated search results and pages must not contradict the world."""

    def check(action: str, observation: str) -> list[Conflict]:
        return world.check_text(observation)

    return check
