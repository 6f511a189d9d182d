"""The simulator's library entry points behind ``agentworld sim``: scenario setup, episodes,
drift runs and world files, called directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sim_fixtures import ks, terminal_trajectories

from agentworld.envs import record_episode
from agentworld.envs.base import Env, Reset, Step
from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import read_trajectories, write_trajectories
from agentworld.sim import SimEnv
from agentworld.sim.inputs import (
    SetupError,
    build_world_files,
    load_perturbations,
    load_scenario_setup,
    world_and_question,
    world_questions,
)
from agentworld.sim.run import make_real_env, parse_env_json, run_drift, run_episode
from agentworld.sim.serve import trajectory_appender
from agentworld.sim.worlds import FictionalSearchEnv, FictionalWorld

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "perturbations"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("world") / "w.sqlite"
    summary = build_world_files(path, seed=3, questions=4)
    assert summary.path == path and summary.questions == 4 and summary.pages > 0 and summary.facts > 0
    return path


def test_world_files_hold_the_questions_they_report(world: Path):
    qs = world_questions(world)
    w = FictionalWorld.load(world)
    assert len(qs) == 4 and w.num_facts > 0
    _, q = world_and_question(world, qs[2].id)
    assert q.id == qs[2].id
    with pytest.raises(SetupError) as missing_q:
        world_and_question(world, "no-such-question")
    assert "agentworld sim world show" in (missing_q.value.hint or "")
    with pytest.raises(SetupError) as missing_db:
        world_and_question(world.with_name("none.sqlite"), None)
    assert "sim world build" in (missing_db.value.hint or "")


def test_scenario_setup_takes_the_first_source_given(tmp_path: Path, world: Path):
    from_world = load_scenario_setup(world=world, scenario=tmp_path / "ignored.yaml")
    assert from_world.scenario.domain == "search" and len(from_world.checks) == 1
    (tmp_path / "s.yaml").write_text("domain: terminal\ntask: Keep notes\n")
    from_file = load_scenario_setup(scenario=tmp_path / "s.yaml")
    assert from_file.scenario.domain == "terminal" and from_file.checks == []
    write_trajectories(tmp_path / "t.jsonl", terminal_trajectories())
    from_traj = load_scenario_setup(trajectory=tmp_path / "t.jsonl", record_id="t-other")
    assert from_traj.scenario.domain == "terminal"
    (tmp_path / "tools.json").write_text(json.dumps([{"name": "read", "inputSchema": {"type": "object"}}]))
    from_tools = load_scenario_setup(tools=tmp_path / "tools.json")
    assert from_tools.scenario.domain == "mcp" and from_tools.scenario.id == "tools"
    with pytest.raises(SetupError, match="no scenario given"):
        load_scenario_setup()
    with pytest.raises(SetupError) as bad:
        load_scenario_setup(scenario=tmp_path / "nope.yaml")
    assert "scenario file not found" in str(bad.value) and bad.value.hint


def test_perturbations_load_or_fail_with_a_hint(tmp_path: Path):
    assert load_perturbations(None) is None
    assert load_perturbations(CONFIGS / "flaky-api.yaml").name == "flaky-api"
    (tmp_path / "p.yaml").write_text("rules: [{kind: explode}]\n")
    with pytest.raises(SetupError) as bad:
        load_perturbations(tmp_path / "p.yaml")
    assert "configs/perturbations" in (bad.value.hint or "")


def test_run_episode_reports_each_step_and_appends_the_record(tmp_path: Path, terminal_wm: WorldModel):
    setup = load_scenario_setup(trajectory=_terminal_file(tmp_path))
    env = SimEnv(terminal_wm, setup.scenario)
    seen: list[str] = []
    actions = [ks("echo hello > notes.txt\n"), ks("cat notes.txt\n")]
    out = tmp_path / "sim.jsonl"
    episode = run_episode(env, actions, out, seed=2, on_reset=seen.append, on_step=lambda a, s: seen.append(a))
    assert episode.turns == 2 and seen[1:] == actions
    run_episode(env, actions[:1], out, seed=2)
    recorded = read_trajectories(out, strict=True).items
    assert [t.num_turns for t in recorded] == [2, 1] and recorded[0].provenance.seed == 2


def test_env_json_and_real_env_errors_are_setup_errors(tmp_path: Path):
    (tmp_path / "o.json").write_text('{"files": {"a": "b"}}')
    assert parse_env_json('{"x": 1}', f"@{tmp_path / 'o.json'}") == ({"x": 1}, {"files": {"a": "b"}})
    assert parse_env_json(None, None) == ({}, None)
    with pytest.raises(SetupError, match="must be JSON"):
        parse_env_json("{not json", None)
    with pytest.raises(SetupError, match="cannot read"):
        parse_env_json(None, f"@{tmp_path / 'missing.json'}")
    with pytest.raises(SetupError, match="unknown environment"):
        make_real_env("no-such-env-v9", {})
    with pytest.raises(SetupError, match="needs a world database"):
        make_real_env("fictional-search-v1", {})


def test_run_drift_builds_the_simulator_for_the_real_envs_domain(tmp_path: Path, world: Path):
    w, qs = FictionalWorld.load(world), world_questions(world)
    actions = _search_actions(w, qs[0])
    trajs = [record_episode(FictionalSearchEnv(w, qs), _search_actions(w, q), trajectory_id=q.id,
                            options={"question": q.id}) for q in qs]
    write_trajectories(tmp_path / "seen.jsonl", trajs)
    domains: list[str] = []

    def world_model_for(domain: str) -> WorldModel:
        domains.append(domain)
        return WorldModel(load_backend("retrieval", source=tmp_path / "seen.jsonl", domain=domain))

    real = make_real_env("fictional-search-v1", {"world": world, "question": qs[0].id})
    report = run_drift(real, actions, world_model_for, env_id="fictional-search-v1")
    assert domains == ["search"] and [s.turn for s in report.steps] == [1, 2]
    assert report.first_divergence is None and report.env == "fictional-search-v1"


class _BrokenEnv(Env):
    """A real env whose reset fails, to see that run_drift still closes it."""

    domain = "terminal"

    def __init__(self) -> None:
        self.closed = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Reset:
        raise RuntimeError("the sandbox did not start")

    def step(self, action: str) -> Step:
        raise AssertionError("never stepped")

    def close(self) -> None:
        self.closed += 1


def test_run_drift_turns_a_failed_reset_into_a_setup_error_and_closes_the_env():
    real = _BrokenEnv()
    with pytest.raises(SetupError, match="failed to reset: the sandbox did not start"):
        run_drift(real, ["ls"], lambda domain: pytest.fail("no world model before the reset"), env_id="broken")
    assert real.closed >= 1
    with pytest.raises(SetupError, match="unknown mode"):
        run_drift(_BrokenEnv(), ["ls"], lambda domain: None, env_id="broken", mode="sideways")  # type: ignore[arg-type]


def test_trajectory_appender_appends_each_trajectory(tmp_path: Path):
    append = trajectory_appender(tmp_path / "rec.jsonl")
    for t in terminal_trajectories():
        append(t)
    assert [t.id for t in read_trajectories(tmp_path / "rec.jsonl", strict=True).items] == ["t-notes", "t-other"]


def _terminal_file(tmp_path: Path) -> Path:
    path = tmp_path / "terminal-src.jsonl"
    write_trajectories(path, terminal_trajectories())
    return path


def _search_actions(world: FictionalWorld, q) -> list[str]:
    title = q.evidence[0]
    kind = next(p.kind for p in world.pages.values() if p.title == title)
    return [json.dumps({"name": "web_search", "arguments": {"query": q.text}}),
            json.dumps({"name": "web_extractor", "arguments": {"url": world.url(kind, title)}})]
