"""Many episodes at once into a resumable JSONL file, and the evaluation summary over them.

Each line is one :class:`~agentworld.agents.runner.Episode` keyed by ``<mode>/<task id>``
and carrying the run's settings. A rerun reads the file first and plays only the
episodes missing from it (or that ended in an error), so a killed run resumes where it
stopped; the file is appended to line by line and locked while a run writes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agentworld.agents.policy import Policy
from agentworld.agents.runner import Episode, episode_key, run_episode
from agentworld.agents.stats import mean_t, wilson
from agentworld.agents.tasks import AgentTask, JudgeFn
from agentworld.jsonl import JsonlAppender, LineError, read_jsonl, run_lock
from agentworld.models import WorldModel


def read_episodes(path: str | Path) -> tuple[list[Episode], list[LineError]]:
    """The episodes of a rollout file, the last line of each key winning."""
    if not Path(path).exists():
        return [], []
    loaded = read_jsonl(path, Episode)
    latest = {ep.key: ep for ep in loaded.items}
    return list(latest.values()), loaded.errors


def pending(tasks: Iterable[AgentTask], modes: Iterable[str], done: Iterable[Episode]) -> list[tuple[str, AgentTask]]:
    finished = {ep.key for ep in done if ep.error is None}
    return [(m, t) for m in modes for t in tasks if episode_key(m, t) not in finished]


async def rollout(policy: Policy, work: list[tuple[str, AgentTask]], out: str | Path, *, settings: dict[str, Any],
                  world_model: WorldModel | None = None, judge: JudgeFn | None = None, concurrency: int = 2,
                  max_turns: int | None = None, on_episode: Callable[[Episode], None] | None = None,
                  perturbations: Any = None, protocol: str = "native") -> list[Episode]:
    """Play every ``(mode, task)`` with at most ``concurrency`` episodes at once, appending each to ``out``."""
    sem = asyncio.Semaphore(max(1, concurrency))
    results: list[Episode] = []
    with run_lock(out), JsonlAppender(out) as sink:

        async def one(mode: str, task: AgentTask) -> None:
            async with sem:
                ep = await run_episode(policy, task, mode=mode, world_model=world_model,  # type: ignore[arg-type]
                                       judge=judge, max_turns=max_turns, settings=settings,
                                       perturbations=perturbations, protocol=protocol)
            sink.append(ep)
            results.append(ep)
            if on_episode is not None:
                on_episode(ep)

        await asyncio.gather(*(one(m, t) for m, t in work))
    return results


def _cell(eps: list[Episode]) -> dict[str, Any]:
    ok = [e for e in eps if e.error is None]
    return {"episodes": len(eps), "errors": len(eps) - len(ok),
            "success": wilson(sum(e.success for e in ok), len(ok)).to_record(),
            "reward": mean_t([e.reward for e in ok]).to_record()}


def summarize(episodes: list[Episode]) -> dict[str, Any]:
    """Success (Wilson 95%) and mean reward (t 95%) per mode, overall and per family, and
    the sim-to-real gap (sim minus real) per family where both modes ran."""
    modes = sorted({e.mode for e in episodes})
    families = sorted({e.family for e in episodes})
    out: dict[str, Any] = {"modes": modes, "overall": {}, "families": {}}
    for m in modes:
        out["overall"][m] = _cell([e for e in episodes if e.mode == m])
    for f in families:
        row: dict[str, Any] = {m: _cell([e for e in episodes if e.mode == m and e.family == f]) for m in modes
                               if any(e.mode == m and e.family == f for e in episodes)}
        if "real" in row and "sim" in row:
            row["gap"] = {k: round(row["sim"][k]["value"] - row["real"][k]["value"], 4) for k in ("success", "reward")}
        out["families"][f] = row
    if "real" in out["overall"] and "sim" in out["overall"]:
        o = out["overall"]
        out["overall"]["gap"] = {k: round(o["sim"][k]["value"] - o["real"][k]["value"], 4) for k in ("success", "reward")}
    return out


def markdown(summary: dict[str, Any]) -> str:
    modes = summary["modes"]
    head = ["family", *(f"{m} success [95% CI]" for m in modes), *(f"{m} reward [95% CI]" for m in modes)]
    both = {"real", "sim"} <= set(modes)
    if both:
        head += ["gap success (sim-real)", "gap reward"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def fmt(c: dict[str, Any] | None) -> str:
        return "-" if c is None else f"{c['value']:.2f} [{c['low']:.2f}, {c['high']:.2f}] (n={c['n']})"

    rows = [*summary["families"].items(), ("**all**", summary["overall"])]
    for name, row in rows:
        cells = [name, *(fmt(row.get(m, {}).get("success")) for m in modes), *(fmt(row.get(m, {}).get("reward")) for m in modes)]
        if both:
            gap = row.get("gap")
            cells += [f"{gap['success']:+.2f}", f"{gap['reward']:+.2f}"] if gap else ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
