"""openenv-core's real clients drive the simulator and the real terminal env over loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openenv.core import GenericEnvClient
from test_sim_fixtures import ServerThread, ks, screen

from agentworld.envs import make
from agentworld.serving import ServerPolicy
from agentworld.sim import Scenario
from agentworld.sim.openenv import AgentWorldClient, TextAction, TextObservation, openenv_app
from agentworld.sim.server import create_app
from agentworld.sim.sessions import EnvSessions, Limits, SessionManager

PROMPT = "root@sandbox:/workspace# "


def _sim(wm, **limits) -> SessionManager:
    return SessionManager(wm, Scenario(domain="terminal", first_observation=PROMPT, success_patterns=["^DONE$"]),
                          limits=Limits(**limits))


async def test_generic_client_drives_the_simulator(terminal_wm):
    manager = _sim(terminal_wm, max_sessions=1)
    with ServerThread(create_app(manager)) as srv:
        async with GenericEnvClient(base_url=srv.url) as env:
            # A refused first reset frees the slot it took (max_sessions is 1).
            with pytest.raises(RuntimeError, match=r"unknown reset options: nope.*\(code: bad_request\)"):
                await env.reset(options={"nope": 1})
            assert manager.sessions == {}
            first = await env.reset(seed=3)
            assert first.observation["text"] == PROMPT and first.done is False and first.reward is None
            res = await env.step({"text": ks("pwd\n")})  # OpenEnv's action object: the Action's fields
            assert res.observation["text"] == screen("pwd", "/workspace") and res.done is False and res.reward == 0.0
            assert res.observation["metadata"]["turn"] == 1
            state = await env.state()
            assert state["step_count"] == 1 and state["episode_id"] and state["done"] is False
            # A second client past the session cap: the server's refusal, with OpenEnv's code field.
            async with GenericEnvClient(base_url=srv.url) as other:
                with pytest.raises(RuntimeError, match=r"session cap reached.*\(code: session_cap\)"):
                    await other.reset()
        # close() sent OpenEnv's close message: the session is gone, its slot free.
        assert manager.sessions == {}
        # The sync wrapper, as a training loop would use it.
        with GenericEnvClient(base_url=srv.url).sync() as env:
            assert env.reset().observation["text"] == PROMPT
            assert env.step({"text": ks("pwd\n")}).observation["text"] == screen("pwd", "/workspace")


async def test_typed_client_sends_the_token_and_reads_typed_results(terminal_wm):
    policy = ServerPolicy(token="s3cret")
    with ServerThread(create_app(_sim(terminal_wm), policy), policy) as srv:
        with pytest.raises(ConnectionError):  # openenv-core's own clients send no token
            await GenericEnvClient(base_url=srv.url).connect()
        async with AgentWorldClient(srv.url, token="s3cret") as env:
            first = await env.reset()
            assert isinstance(first.observation, TextObservation) and first.observation.text == PROMPT
            res = await env.step(TextAction(text=ks("pwd\n")))
            assert res.observation.text == screen("pwd", "/workspace") and res.observation.metadata["turn"] == 1
            assert (await env.state()).step_count == 1
            with pytest.raises(RuntimeError, match="code: bad_request"):
                await env.step({"txt": ks("ls\n")})


async def test_openenv_core_server_over_an_agentworld_env(terminal_wm):
    """openenv-core's own create_app over AgentWorldEnvironment: its protocol, unchanged."""
    scenario = Scenario(domain="terminal", first_observation=PROMPT)
    app = openenv_app(lambda: make("sim-v1", world_model=terminal_wm, scenario=scenario), max_concurrent_envs=2)
    with ServerThread(app) as srv:
        async with GenericEnvClient(base_url=srv.url) as env:
            assert (await env.reset(seed=0)).observation["text"] == PROMPT
            res = await env.step(TextAction(text=ks("pwd\n")))
            assert res.observation["text"] == screen("pwd", "/workspace") and res.done is False
            assert (await env.state())["step_count"] == 1


async def test_an_environment_that_fails_to_start_is_a_clear_error_and_frees_its_slot():
    import httpx

    def broken(_sid: str):
        raise RuntimeError("no sandbox here")

    sessions = EnvSessions(broken, env_id="terminal-v1", limits=Limits(max_sessions=1))
    with ServerThread(create_app(sessions)) as srv:
        async with GenericEnvClient(base_url=srv.url) as env:
            with pytest.raises(RuntimeError, match=r"could not start terminal-v1: no sandbox here \(code: env_error\)"):
                await env.reset()
        async with httpx.AsyncClient(base_url=srv.url) as client:
            r = await client.post("/reset", json={})
            assert r.status_code == 500 and r.json()["error"] == "env_error"
            assert (await client.get("/health")).json()["sessions"] == 0


def _keys(text: str, duration: float) -> dict[str, str]:
    return {"text": json.dumps([{"keystrokes": text, "duration": duration}])}


@pytest.mark.sandbox
@pytest.mark.slow
async def test_generic_client_drives_the_real_terminal_env(tmp_path):
    import asyncio

    from agentworld.envs.sandbox import ensure_rootfs
    from agentworld.records.trajectory import read_trajectories

    ensure_rootfs()
    sessions = EnvSessions(lambda _sid: make("terminal-v1"), env_id="terminal-v1", limits=Limits(max_sessions=2),
                           record=tmp_path / "real.jsonl")
    with ServerThread(create_app(sessions)) as srv:
        async with GenericEnvClient(base_url=srv.url, message_timeout_s=120) as env, \
                GenericEnvClient(base_url=srv.url, message_timeout_s=120) as slow:
            first = await env.reset(seed=0, options={"files": {"notes.txt": "hello from the host\n"}})
            assert first.observation["text"].startswith("root@sandbox:/workspace#")
            res = await env.step(_keys("cat notes.txt\n", 3))
            assert "hello from the host" in res.observation["text"] and res.done is False
            assert (await env.state())["step_count"] == 1
            with pytest.raises(RuntimeError, match="simulator's"):
                await env.reset(scenario={"domain": "terminal"})
            # A third session past the cap is refused; the two open ones are untouched.
            await slow.reset()
            async with GenericEnvClient(base_url=srv.url) as third:
                with pytest.raises(RuntimeError, match="code: session_cap"):
                    await third.reset()
            # A blocking step in one session (a command that takes seconds) does not hold up
            # another: its step is answered while the slow one is still running.
            slow_step = asyncio.create_task(slow.step(_keys("sleep 6; echo woke\n", 12)))
            await asyncio.sleep(0.5)
            quick = await env.step(_keys("echo quick\n", 2))
            assert "quick" in quick.observation["text"] and not slow_step.done()
            assert "woke" in (await slow_step).observation["text"]
        assert sessions.sessions == {}
    trajs = read_trajectories(tmp_path / "real.jsonl", strict=True).items
    assert {t.provenance.source for t in trajs} == {"real"} and sorted(t.num_turns for t in trajs) == [1, 2]
    assert any("hello from the host" in t.turns[0].observation for t in trajs)


@pytest.mark.slow
def test_trl_grpo_trainer_takes_a_served_env_as_its_environment(terminal_wm, tmp_path):
    """TRL's OpenEnv path as far as construction goes: GRPOTrainer probes the factory,
    finds the `act` tool and the env-owned reward; the env itself plays an episode."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import __file__ as templates_py

    from agentworld.models.tiny import build_tiny_checkpoint
    from agentworld.sim.openenv import OpenEnvTool

    ckpt = build_tiny_checkpoint(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(ckpt)
    # A tool-calling chat template (TRL's copy of Qwen3's): GRPOTrainer requires one for environments.
    tokenizer.chat_template = (Path(templates_py).parent / "chat_templates" / "qwen3.jinja").read_text()
    scenario = {"domain": "terminal", "first_observation": PROMPT, "success_patterns": ["pwd\n/workspace"]}
    with ServerThread(create_app(_sim(terminal_wm, max_sessions=4))) as srv:
        made: list[OpenEnvTool] = []

        def factory() -> OpenEnvTool:
            made.append(OpenEnvTool(srv.url, scenario=scenario))
            return made[-1]

        args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, max_steps=1, per_device_train_batch_size=2,
                          num_generations=2, max_completion_length=16, report_to="none")
        data = Dataset.from_list([{"prompt": [{"role": "user", "content": "Print the working directory."}]}] * 2)
        trainer = GRPOTrainer(model=str(ckpt), args=args, train_dataset=data, processing_class=tokenizer,
                              environment_factory=factory)
        assert [t.__name__ for t in trainer.tools] == ["act"] and trainer.reward_func_names == ["OpenEnvTool"]
        env = made[0]
        assert env.reset() == PROMPT
        assert env.act(ks("pwd\n")) == screen("pwd", "/workspace") and env.get_reward() == 1.0
        assert "episode is over" in env.act(ks("ls\n"))
        for e in made:
            e._close()


@pytest.mark.slow
async def test_env_serve_cli_serves_a_real_env_to_the_typed_client_and_records_on_sigterm(tmp_path):
    from agentworld.launch import launched
    from agentworld.records.trajectory import read_trajectories
    from agentworld.sim.inputs import build_world_files

    world = tmp_path / "world.sqlite"
    build_world_files(world, seed=1, questions=3)
    record = tmp_path / "served.jsonl"
    args = ("env", "serve", "fictional-search", "--env-kwargs", json.dumps({"world": str(world)}),
            "--token", "t0k", "--record", str(record))
    with launched(*args, timeout=120) as url:
        env = AgentWorldClient(url, token="t0k")
        await env.connect()
        first = await env.reset(seed=0)
        assert first.observation.text and first.done is False
        res = await env.step(json.dumps({"name": "web_search", "arguments": {"query": "founder"}}))
        assert res.observation.text.startswith(("[1]", "No results")) and (await env.state()).step_count == 1
        assert not record.exists()
    # The server was stopped (SIGTERM) with the session still open: it was recorded all the same.
    await env.close()
    [traj] = read_trajectories(record, strict=True).items
    assert traj.provenance.source == "real" and traj.provenance.environment == "fictional-search-v1" and traj.num_turns == 1
