"""``search-v1``: web search, page extraction and memory over the offline corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.mcp.env import parse_tool_call
from agentworld.envs.search.index import SearchEngine, default_corpus_dir
from agentworld.envs.search.tools import TOOLS, SearchTools
from agentworld.records.trajectory import SimContext


class SearchEnv(Env):
    """A real search engine over a real offline corpus; one memory per episode.

    The engine is opened once per env and shared by its episodes (it is read-only);
    pass ``engine`` to share it across envs too.
    """

    domain = "search"
    deterministic_reset = True

    def __init__(self, *, corpus: str | Path | None = None, engine: SearchEngine | None = None):
        self.engine = engine or SearchEngine(corpus or default_corpus_dir())
        self.tools = SearchTools(self.engine)
        self._task = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.tools.reset()
        self._task = (options or {}).get("task", "")
        return Reset(self._task, {"corpus": str(self.engine.path), "passages": self.engine.manifest["passages"]})

    def step(self, action: str) -> Step:
        parsed = parse_tool_call(action)
        if isinstance(parsed, str):
            return Step(f"Error: {parsed}", 0.0, False, False, {"is_error": True})
        name, args = parsed
        obs = self.tools.call(name, args)
        return Step(obs, 0.0, False, False, {"tool": name, "is_error": obs.startswith("Error: ")})

    def context(self) -> SimContext:
        counts = self.engine.manifest["counts"]
        state = "Offline web of {} pages ({}).".format(
            self.engine.manifest["pages"], ", ".join(f"{s}: {c['pages']}" for s, c in counts.items() if c["pages"]))
        return SimContext(task_description=self._task, tools=TOOLS, initial_state=state)
