"""The agent driver against a real OpenAI-compatible server.

The served model is the retrieval backend over a store of (screen -> next action)
pairs taken from a recorded scripted episode: a nearest-neighbour policy, so the
replies are real model-server answers that the driver must parse and act on.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from agentworld.envs.sandbox import ensure_rootfs
from agentworld.envs.terminal import TEMPLATES, TerminalEnv
from agentworld.envs.terminal.drivers import AgentConfig, parse_agent_reply, run_agent, run_scripted
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

pytestmark = pytest.mark.sandbox


def test_parse_agent_reply() -> None:
    want = json.dumps([{"keystrokes": "ls\n", "duration": 1.0}])
    assert parse_agent_reply('[{"keystrokes": "ls\\n", "duration": 1}]') == want
    assert parse_agent_reply('Sure:\n```json\n[{"keystrokes": "ls\\n", "duration": 1}]\n```') == want
    assert parse_agent_reply('<predicted_observation>[{"keystrokes": "ls\\n", "duration": 1}]</predicted_observation>') == want
    assert parse_agent_reply("[{'keystrokes': 'ls\\n', 'duration': 1,}]") == want
    assert parse_agent_reply('{"keystrokes": "C-c", "duration": 1}') == json.dumps([{"keystrokes": "C-c", "duration": 1.0}])
    assert parse_agent_reply('{"done": true}') == "" and parse_agent_reply("DONE") == ""
    for bad in ("I would list the files first.", "[]", '[{"keys": "ls"}]', ""):
        assert parse_agent_reply(bad) is None


class _Server:
    """``agentworld serve``'s app for a retrieval backend, on a free port in a thread."""

    def __init__(self, source: Path):
        import uvicorn

        from agentworld.models import load_backend
        from agentworld.models.serve import create_app

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = create_app(load_backend("retrieval", source=source, domain="terminal"), model_name="nn-policy")
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "server did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _policy_store(path: Path, demo: Trajectory, first_screen: str, replies: list[str] | None = None) -> Path:
    screens = [first_screen] + [t.observation for t in demo.turns[:-1]]
    actions = replies or [t.action for t in demo.turns]
    turns = [Turn(action=s, observation=a) for s, a in zip(screens, actions, strict=True)]
    write_trajectories(path, [Trajectory(id="policy", domain="terminal", turns=turns)])
    return path


def test_agent_driver_records_a_real_episode(tmp_path: Path) -> None:
    ensure_rootfs()
    task = TEMPLATES.get("chmod-script").instance(4)
    with TerminalEnv() as env:
        first = env.reset(options={"task": task}).observation
        demo = run_scripted(env, task, seed=4, trajectory_id="demo")
        good = _policy_store(tmp_path / "good.jsonl", demo, first)
        bad = _policy_store(tmp_path / "bad.jsonl", demo, first, ["Let me think about the permissions."] * len(demo.turns))
        config = AgentConfig(model="nn-policy", max_turns=4, max_invalid=2)
        with _Server(good) as url:
            traj = asyncio.run(run_agent(env, task, AgentConfig(**{**config.__dict__, "base_url": url}),
                                         seed=4, trajectory_id="agent-0"))
        assert traj.provenance.agent == "nn-policy" and traj.provenance.finished == "max_steps"
        assert len(traj.turns) == 4 and traj.initial_state and traj.task_description == task.description
        scripted = {t.action for t in demo.turns}
        assert all(t.action in scripted for t in traj.turns)
        assert all(t.observation.startswith("root@sandbox:/workspace# ") for t in traj.turns)
        with _Server(bad) as url:
            traj = asyncio.run(run_agent(env, task, AgentConfig(**{**config.__dict__, "base_url": url}),
                                         seed=4, trajectory_id="agent-1"))
        assert traj.provenance.finished == "invalid_actions" and traj.turns == []
