"""Drift: the same actions in real environments and in the simulator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.envs import make, record_episode
from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import write_trajectories
from agentworld.sim import SimEnv
from agentworld.sim.drift import measure_drift, scenario_for
from agentworld.sim.worlds import FictionalSearchEnv, FictionalWorld, build_world, world_check, world_scenario, write_questions


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture(scope="module")
def world_files(tmp_path_factory) -> tuple[Path, FictionalWorld, list]:
    db = build_world(tmp_path_factory.mktemp("drift") / "w.sqlite", seed=9)
    return db, FictionalWorld.load(db), write_questions(db, seed=9, count=4)


def _search_actions(world: FictionalWorld, q) -> list[str]:
    title = q.evidence[0]
    kind = next(p.kind for p in world.pages.values() if p.title == title)
    return [_call("web_search", query=q.text), _call("web_extractor", url=world.url(kind, title))]


def test_search_drift_is_low_when_the_simulator_knows_the_world(tmp_path: Path, world_files):
    _, world, qs = world_files
    real = FictionalSearchEnv(world, qs)
    # The simulator's memory: real episodes of the other questions and of this one.
    trajs = [record_episode(real, _search_actions(world, q), trajectory_id=q.id, options={"question": q.id}) for q in qs]
    write_trajectories(tmp_path / "seen.jsonl", trajs)
    wm = WorldModel(load_backend("retrieval", source=tmp_path / "seen.jsonl", domain="search"))
    q = qs[1]
    real = FictionalSearchEnv(world, [q])
    sim = SimEnv(wm, world_scenario(world, q), checks=[world_check(world)])
    report = measure_drift(real, sim, _search_actions(world, q), env_name="fictional-search")
    assert [s.turn for s in report.steps] == [1, 2]
    assert report.first_divergence is None and report.mean_total == 5.0
    assert all(s.real == s.sim for s in report.steps)


def test_search_drift_finds_where_a_simulator_of_another_world_diverges(tmp_path: Path, world_files):
    _, world, qs = world_files
    elsewhere = FictionalWorld.load(build_world(tmp_path / "elsewhere.sqlite", seed=10))
    other_qs = write_questions(elsewhere.path, seed=10, count=4)
    other = FictionalSearchEnv(elsewhere, other_qs)
    trajs = [record_episode(other, _search_actions(elsewhere, q), trajectory_id=q.id, options={"question": q.id}) for q in other_qs]
    write_trajectories(tmp_path / "elsewhere.jsonl", trajs)
    wm = WorldModel(load_backend("retrieval", source=tmp_path / "elsewhere.jsonl", domain="search"))
    q = qs[0]
    for mode in ("forced", "free"):
        sim = SimEnv(wm, world_scenario(world, q))
        report = measure_drift(FictionalSearchEnv(world, [q]), sim, _search_actions(world, q), mode=mode)
        assert report.first_divergence is not None and report.mode == mode
        assert all(s.total is not None and s.total < 5 for s in report.steps)


def test_drift_command(tmp_path: Path, world_files):
    from agentworld.cli import app

    db, world, qs = world_files
    qfile = db.with_suffix(".questions.jsonl")
    from dataclasses import asdict

    qfile.write_text("".join(json.dumps(asdict(q)) + "\n" for q in qs))
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([json.loads(a) for a in _search_actions(world, qs[0])]))
    trajs = [record_episode(FictionalSearchEnv(world, qs), _search_actions(world, q), trajectory_id=q.id, options={"question": q.id}) for q in qs]
    write_trajectories(tmp_path / "seen.jsonl", trajs)
    report = tmp_path / "report.json"
    res = CliRunner().invoke(app, ["sim", "drift", "--env", "fictional-search-v1", "--world", str(db), "--question", qs[0].id,
                                   "--actions", str(actions), "-b", "retrieval:" + str(tmp_path / "seen.jsonl"),
                                   "--report", str(report)])
    assert res.exit_code == 0, res.output
    data = json.loads(report.read_text())
    assert len(data["steps"]) == 2 and not any(s["diverged"] for s in data["steps"])
    bad = CliRunner().invoke(app, ["sim", "drift", "--env", "no-such-env-v9", "--actions", str(actions), "-b", "retrieval",
                                   "--opt", f"source={tmp_path / 'seen.jsonl'}"])
    assert bad.exit_code == 2 and "unknown environment" in bad.output
    # The fictional world is an ordinary registered env: --world is its `world` argument.
    no_world = CliRunner().invoke(app, ["sim", "drift", "--env", "fictional-search-v1", "--actions", str(actions),
                                        "-b", "retrieval:" + str(tmp_path / "seen.jsonl")])
    assert no_world.exit_code == 2 and "needs a world database" in " ".join(no_world.output.split())
    assert "Traceback" not in no_world.output
    missing = CliRunner().invoke(app, ["sim", "drift", "--env", "fictional-search-v1", "--world", str(tmp_path / "none.sqlite"),
                                       "--actions", str(actions), "-b", "retrieval:" + str(tmp_path / "seen.jsonl")])
    assert missing.exit_code == 2 and "world database not found" in " ".join(missing.output.split())


def _mcp_ready() -> bool:
    try:
        from agentworld.envs.mcp import missing_servers
    except ImportError:
        return False
    return shutil.which("bwrap") is not None and not missing_servers(["filesystem"])


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(not _mcp_ready(), reason="the real filesystem MCP server is not installed (scripts/setup.sh)")
def test_drift_against_the_real_mcp_filesystem_server(tmp_path: Path):
    root = "/workspace/files"
    recorded_actions = [_call("write_file", path=f"{root}/notes.txt", content="alpha"),
                        _call("read_text_file", path=f"{root}/notes.txt"),
                        _call("list_directory", path=root)]
    real = make("mcp-v1", servers=["filesystem"])
    try:
        traj = record_episode(real, recorded_actions, trajectory_id="fs-1", seed=0)
        write_trajectories(tmp_path / "fs.jsonl", [traj])
        wm = WorldModel(load_backend("retrieval", source=tmp_path / "fs.jsonl", domain="mcp"))
        first = real.reset(seed=0).observation
        same = measure_drift(real, SimEnv(wm, scenario_for(real, first)), recorded_actions, env_name="mcp-v1")
        assert same.first_divergence is None and all(s.real == s.sim for s in same.steps)
        # New content: the simulator (which only saw "alpha") diverges when the file is read back,
        # and its ledger knows why.
        changed = [_call("write_file", path=f"{root}/notes.txt", content="omega"), recorded_actions[1]]
        report = measure_drift(real, SimEnv(wm, scenario_for(real, first)), changed, env_name="mcp-v1")
        assert report.first_divergence == 2 and report.steps[1].conflicts == 1
        assert "omega" in report.steps[1].real and "alpha" in report.steps[1].sim
    finally:
        real.close()


def _sandbox_ready() -> bool:
    try:
        from agentworld.envs.sandbox.prereq import check_host

        check_host()
    except Exception:  # any missing prerequisite means: no real terminal here
        return False
    return shutil.which("tmux") is not None


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(not _sandbox_ready(), reason="bwrap/overlayfs/tmux unavailable (scripts/setup.sh)")
def test_drift_against_the_real_terminal(tmp_path: Path):
    from agentworld.envs.sandbox import ensure_rootfs

    ensure_rootfs()
    ks = lambda text: json.dumps([{"keystrokes": text, "duration": 2.0}])  # noqa: E731
    actions = [ks("echo alpha > notes.txt\n"), ks("cat notes.txt\n"), ks("pwd\n")]
    real = make("terminal-v1")
    try:
        write_trajectories(tmp_path / "term.jsonl", [record_episode(real, actions, trajectory_id="term-1", seed=0)])
        wm = WorldModel(load_backend("retrieval", source=tmp_path / "term.jsonl", domain="terminal"))
        first = real.reset(seed=0).observation
        same = measure_drift(real, SimEnv(wm, scenario_for(real, first)), actions, env_name="terminal-v1")
        assert same.first_divergence is None and all(s.real == s.sim for s in same.steps)
        changed = [ks("echo omega > notes.txt\n"), ks("cat notes.txt\n")]
        report = measure_drift(real, SimEnv(wm, scenario_for(real, first)), changed, env_name="terminal-v1", mode="free")
        # The floor shows this action's command in the echo (deterministic), so the first
        # divergence is the file's content: cat prints what the recording wrote.
        assert report.first_divergence == 2 and report.steps[0].real == report.steps[0].sim
        assert report.steps[1].conflicts == 1 and "omega" in report.steps[1].real and "alpha" in report.steps[1].sim
    finally:
        real.close()
