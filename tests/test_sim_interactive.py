"""A person's simulated session, driven directly: undo, failed predictions, saving."""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_sim_fixtures import ks

from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import read_trajectories
from agentworld.sim import Scenario, SimEnv
from agentworld.sim.interactive import UndoableSession


def _session(wm: WorldModel) -> UndoableSession:
    env = SimEnv(wm, Scenario(id="notes", domain="terminal", task="Keep notes"), use_ledger=False)
    env.reset()
    return UndoableSession(env)


def test_steps_undo_and_save(tmp_path: Path, terminal_wm: WorldModel):
    session = _session(terminal_wm)

    async def play() -> None:
        for cmd in ("echo hello > notes.txt\n", "cat notes.txt\n"):
            played = await session.step(ks(cmd))
            assert not played.failed and played.turn.action == ks(cmd)

    asyncio.run(play())
    assert session.env.turn == 2
    assert session.undo() and session.env.turn == 1
    assert session.undo() and not session.undo() and session.env.turn == 0
    asyncio.run(play())
    traj = session.save(tmp_path / "s.jsonl")
    [saved] = read_trajectories(tmp_path / "s.jsonl", strict=True).items
    assert saved.num_turns == 2 and saved.provenance.agent == "human" and saved.id == traj.id == "session"
    assert saved.system_str == session.env.scenario.system_prompt()


def test_a_failed_prediction_is_shown_but_never_joins_the_history():
    # A real OpenAI-compatible client pointed at a closed loopback port: every call fails.
    wm = WorldModel(load_backend("openai", model="m", base_url="http://127.0.0.1:9/v1", max_retries=0))
    session = _session(wm)
    played = asyncio.run(session.step("ls"))
    assert played.failed and played.turn.error and played.turn.action == "ls"
    assert session.env.turn == 0 and not session.undo()
