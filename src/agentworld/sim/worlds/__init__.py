"""Fictional worlds for search: invented facts in SQLite, questions from SQL, teasing search."""

from agentworld.sim.worlds.build import (
    Question,
    WorldSize,
    build_world,
    load_questions,
    questions_path,
    save_questions,
    write_questions,
)
from agentworld.sim.worlds.env import TOOLS, FictionalSearchEnv, item_f1, world_check, world_scenario
from agentworld.sim.worlds.pages import FictionalWorld, Page

__all__ = [
    "TOOLS",
    "FictionalSearchEnv",
    "FictionalWorld",
    "Page",
    "Question",
    "WorldSize",
    "build_world",
    "item_f1",
    "load_questions",
    "questions_path",
    "save_questions",
    "world_check",
    "world_scenario",
    "write_questions",
]
