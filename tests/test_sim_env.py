"""SimEnv against real local world models: the retrieval backend and a tiny Llama."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_sim_fixtures import READ_TOOLS, call, ks, mcp_trajectories, screen, terminal_trajectories

from agentworld.models import CacheMiss, ResponseCache, WorldModel, load_backend
from agentworld.records.trajectory import read_trajectories, write_trajectories
from agentworld.sim import FAILED, PerturbationSpec, Scenario, SimEnv
from agentworld.sim.replay import ReplayMismatch, replay_episode

PROMPT = "root@sandbox:/workspace# "


def _terminal_env(wm: WorldModel, **kw) -> SimEnv:
    return SimEnv(wm, Scenario(domain="terminal", task="Keep notes", first_observation=PROMPT), **kw)


def test_gymnasium_contract_and_recording(terminal_wm, tmp_path: Path):
    env = _terminal_env(terminal_wm)
    obs, info = env.reset(seed=3)
    assert obs == PROMPT and info["domain"] == "terminal" and info["session_id"] == env.session_id
    obs, reward, terminated, truncated, info = env.step(ks("echo hello > notes.txt\n"))
    assert obs == screen("echo hello > notes.txt") and reward == 0.0 and not terminated and not truncated
    assert info["turn"] == 1 and info["error"] is None
    env.step(ks("cat notes.txt\n"))
    traj = env.record(trajectory_id="sim-1")
    assert traj.provenance.source == "sim" and traj.provenance.seed == 3 and traj.num_turns == 2
    write_trajectories(tmp_path / "t.jsonl", [traj])
    back = read_trajectories(tmp_path / "t.jsonl", strict=True).items[0]
    assert back.turns[1].observation == screen("cat notes.txt", "hello") and back.sim_scenario["domain"] == "terminal"


def test_ledger_feeds_the_prompt_and_flags_contradictions(terminal_wm):
    env = _terminal_env(terminal_wm)
    env.reset()
    env.step(ks("echo bye > notes.txt\n"))  # the index only knows notes.txt containing "hello"
    system = env.messages_for(ks("cat notes.txt\n"))[0]["content"]
    assert 'file /workspace/notes.txt contains: "bye\\n"' in system
    step = env.step(ks("cat notes.txt\n"))
    assert "hello" in step.observation
    assert [c["kind"] for c in step.info["ledger_conflicts"]] == ["file_content"]
    assert env.record().turns[-1].metadata["conflicts"][0]["key"] == "/workspace/notes.txt"
    without = _terminal_env(terminal_wm, use_ledger=False)
    without.reset()
    without.step(ks("echo bye > notes.txt\n"))
    assert "notes.txt contains" not in without.messages_for(ks("ls\n"))[0]["content"]


def test_resampling_replaces_a_contradicting_prediction(terminal_wm):
    env = _terminal_env(terminal_wm, resample=6)
    env.reset()
    env.step(ks("rm notes.txt\n"))
    # The nearest past turn shows the file's content; one of the alternatives says it is gone.
    step = env.step(ks("cat notes.txt\n"))
    assert step.info["resampled"] == 6
    assert "No such file or directory" in step.observation and step.info["ledger_conflicts"] == []
    plain = _terminal_env(terminal_wm)
    plain.reset()
    plain.step(ks("rm notes.txt\n"))
    assert [c["kind"] for c in plain.step(ks("cat notes.txt\n")).info["ledger_conflicts"]] == ["deleted_path"]


def test_perturbations_reach_prompt_observation_info_and_record(mcp_wm):
    spec = PerturbationSpec(seed=1, rules=[
        {"kind": "permission_denied", "turns": [1]},
        {"kind": "pagination", "mode": "mechanical", "turns": [2], "params": {"page_size": 2}},
        {"kind": "api_error", "turns": [3]},
    ])
    env = SimEnv(mcp_wm, Scenario(domain="mcp", tools=READ_TOOLS), perturbations=spec)
    env.reset(seed=0)
    semantic = env.messages_for(call("read_file", path="/data/a.txt"), [spec.plan(session_seed=0, turn=1, action=call("read_file", path="/data/a.txt"), fired={})[0].detail])
    assert "permission denied" in semantic[0]["content"]
    first = env.step(call("read_file", path="/data/a.txt"))
    assert first.info["injections"][0]["kind"] == "permission_denied"
    paged = env.step(call("list_items"))
    assert [x["id"] for x in json.loads(json.loads(paged.observation)["content"][0]["text"])] == [0, 1]
    failed = env.step(call("read_file", path="/data/a.txt"))
    assert '"isError": true' in failed.observation and "503" in failed.observation
    kinds = [[i["kind"] for i in t.metadata["injections"]] for t in env.record().turns]
    assert kinds == [["permission_denied"], ["pagination"], ["api_error"]]


def test_snapshot_restore_and_fork_are_independent(terminal_wm):
    env = _terminal_env(terminal_wm)
    env.reset()
    env.step(ks("echo hello > notes.txt\n"))
    snap = env.snapshot()
    twin = env.fork()
    assert twin.session_id != env.session_id and twin.turn == 1 and twin.ledger.files == env.ledger.files
    twin.step(ks("rm notes.txt\n"))
    assert twin.turn == 2 and env.turn == 1 and "/workspace/notes.txt" in env.ledger.files
    env.step(ks("ls\n"))
    env.restore(snap)
    assert env.turn == 1 and env.session_id == snap.session_id


async def test_many_async_sessions_keep_their_own_history(terminal_wm):
    envs = [_terminal_env(terminal_wm) for _ in range(16)]
    await asyncio.gather(*(e.areset(seed=i) for i, e in enumerate(envs)))
    await asyncio.gather(*(e.astep(ks(f"echo {i} > f{i}.txt\n")) for i, e in enumerate(envs)))
    steps = await asyncio.gather(*(e.astep(ks("pwd\n")) for e in envs))
    assert all(s.observation == screen("pwd", "/workspace") for s in steps)
    assert [list(e.ledger.files) for e in envs] == [[f"/workspace/f{i}.txt"] for i in range(16)]
    assert len({e.session_id for e in envs}) == 16


def test_success_and_turn_limit(terminal_wm):
    env = SimEnv(terminal_wm, Scenario(domain="terminal", success_patterns=[r"Linux sandbox"], max_turns=5))
    env.reset()
    step = env.step(ks("uname -a\n"))
    assert step.terminated and step.reward == 1.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step(ks("ls\n"))
    short = SimEnv(terminal_wm, Scenario(domain="terminal", max_turns=1))
    short.reset()
    assert short.step(ks("ls\n")).truncated


def test_scenario_from_trajectory_keeps_the_context():
    traj = mcp_trajectories()[0]
    sc = Scenario.from_trajectory(traj, hidden_summary="the db has 8 items")
    assert sc.tools == READ_TOOLS and sc.task == "Read files" and sc.domain == "mcp"
    assert Scenario.from_trajectory(terminal_trajectories()[0]).first_observation == PROMPT
    prompt = sc.system_prompt(state="file /x contains: 1", instructions=["fail once"])
    assert "the db has 8 items" in prompt and "file /x contains" in prompt and "- fail once" in prompt


def test_strict_replay_reproduces_an_episode(tmp_path: Path):
    write_trajectories(tmp_path / "src.jsonl", terminal_trajectories())
    spec = PerturbationSpec(seed=2, rules=[{"kind": "api_error", "probability": 0.5}])
    live = WorldModel(load_backend("retrieval", source=tmp_path / "src.jsonl"), cache=ResponseCache(tmp_path / "c.sqlite"))
    env = SimEnv(live, Scenario(domain="terminal", first_observation=PROMPT), perturbations=spec, resample=1)
    env.reset(seed=11)
    for cmd in ("echo hello > notes.txt\n", "cat notes.txt\n", "rm notes.txt\n", "cat notes.txt\n", "uname -a\n"):
        env.step(ks(cmd))
    recorded = env.record()
    asyncio.run(live.aclose())
    replay_wm = WorldModel(load_backend("retrieval", source=tmp_path / "src.jsonl"), cache=ResponseCache(tmp_path / "c.sqlite", mode="replay"))
    assert replay_episode(replay_wm, recorded) == 5
    tampered = recorded.model_copy(deep=True)
    tampered.turns[1].observation = "something else"
    with pytest.raises(ReplayMismatch, match="turn 2"):
        replay_episode(replay_wm, tampered)
    unseen = recorded.model_copy(deep=True)
    unseen.turns[0].action = ks("echo never-recorded\n")
    with pytest.raises(CacheMiss):
        replay_episode(replay_wm, unseen)


@pytest.mark.slow
def test_tiny_hf_model_answers_are_forced_into_the_block(tmp_path: Path):
    from agentworld.models import GenerationConfig
    from agentworld.models.tiny import build_tiny_checkpoint

    wm = WorldModel(load_backend("hf", path=build_tiny_checkpoint(tmp_path / "tiny", seed=0)),
                    defaults=GenerationConfig(max_tokens=12))
    env = _terminal_env(wm)
    env.reset()
    step = env.step(ks("ls\n"))
    # A local backend's answer opens the observation block by construction (the output
    # contract), so it is never untagged; random weights never close it in 12 tokens, and a
    # cut-off observation fails the step loudly instead of being shown as the screen.
    assert step.info["prediction_status"] == "truncated"
    assert step.truncated and step.info["error"] == "prediction truncated"


def test_cut_off_answers_fail_loudly_not_silently():
    from agentworld.models.base import Backend, Completion

    class CutOff(Backend):
        """A model that always runs out of tokens inside its observation block."""

        name = "cutoff"
        model_id = "cutoff"

        async def complete(self, messages, config, *, domain=None):
            return [Completion(text="<think>ok</think><predicted_observation>\nroot@sandbox:/work", finish_reason="length")]

    env = _terminal_env(WorldModel(CutOff()))
    env.reset()
    step = env.step(ks("ls\n"))
    assert step.truncated and step.observation == FAILED and "truncated" in step.info["error"]
    assert step.info["prediction_status"] == "truncated"
    assert env.record().turns[0].metadata["error"] == step.info["error"]


def test_env_passes_its_domain_to_the_backend(tmp_path: Path):
    """A floor indexing two domains answers a terminal session from terminal turns: the
    env tells the backend its domain (sync and async steps alike)."""
    write_trajectories(tmp_path / "both.jsonl", terminal_trajectories() + mcp_trajectories())
    floor = load_backend("retrieval", source=tmp_path / "both.jsonl")
    assert set(floor.num_docs) == {"terminal", "mcp"}
    env = _terminal_env(WorldModel(floor))
    env.reset(seed=0)
    step = env.step(ks("echo hello > notes.txt\n"))
    assert step.info["error"] is None and step.observation == screen("echo hello > notes.txt")
    step = asyncio.run(env.astep(ks("cat notes.txt\n")))
    assert step.info["error"] is None and step.observation.startswith("root@sandbox:/workspace# cat notes.txt")
