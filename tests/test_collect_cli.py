"""The collect commands' shared options: declared once, with per-command defaults, in one order."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from agentworld.cli import app

SHARED_HEAD = ["out_path", "episodes", "test_episodes", "seed", "workers", "bench_dir"]
SHARED_TAIL = ["agent", "agent_opt", "executor", "ray_address", "ray_workers", "ray_cpus", "ray_memory_mb"]


def _params(command: str) -> dict[str, object]:
    group = typer.main.get_command(app).commands["collect"]  # type: ignore[attr-defined]
    return {p.name: p.default for p in group.commands[command].params}


def test_every_command_takes_the_shared_options_around_its_own() -> None:
    own = {
        "terminal": ["template", "build", "max_steps"],
        "mcp": ["template", "agent_native_tools"],
        "search": ["template", "corpus", "build", "rebuild", "max_pages", "source", "agent_native_tools"],
        "swe": ["repo", "agent_native_tools", "max_steps", "download"],
        "os": ["template", "build", "max_steps", "episode_timeout"],
        "web": ["template", "max_steps", "episode_timeout"],
    }
    for command, names in own.items():
        assert list(_params(command)) == [*SHARED_HEAD, *names, *SHARED_TAIL], command


def test_episode_defaults_are_per_command() -> None:
    expected = {"terminal": (20, 60), "mcp": (20, 30), "search": (20, 30), "swe": (0, 30), "os": (20, 40), "web": (40, 40)}
    for command, (episodes, test_episodes) in expected.items():
        params = _params(command)
        assert (params["episodes"], params["test_episodes"]) == (episodes, test_episodes), command
        assert (params["seed"], params["workers"], params["agent"]) == (0, 2, "scripted"), command


def test_shared_options_reach_the_run(tmp_path: Path) -> None:
    # No episodes to record: the options still travel to the report, which names the file.
    out = tmp_path / "none.jsonl"
    res = CliRunner().invoke(app, ["collect", "mcp", "-t", "time", "--episodes", "0", "--test-episodes", "0",
                                   "-o", str(out)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert f"{out}: 0 recorded, 0 already there, 0 failed" in res.output
