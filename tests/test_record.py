"""The one recorder (``RecordTurns``), its info sanitiser, the shared simulation context
and the declared trajectory fields."""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from pydantic import BaseModel
from test_sim_fixtures import ks, screen

from agentworld.envs import Env, InfoNotJSON, RecordTurns, Reset, Step, record_episode, sanitize_info
from agentworld.envs.terminal import TerminalEnv
from agentworld.jsonl import dumps
from agentworld.prompts import build_system_prompt, trajectory_system_prompt
from agentworld.records.trajectory import Provenance, SimContext, Trajectory, read_trajectories, write_trajectories
from agentworld.sim import Scenario, SimEnv

ROOT = Path(__file__).resolve().parents[1]


def _record(env: Env, actions: list[str], **reset: Any) -> Trajectory:
    """The same recording code for every environment."""
    rec = RecordTurns(env)
    rec.reset(**reset)
    for action in actions:
        if rec.step(action).terminated:
            break
    return rec.trajectory(trajectory_id="rec", provenance=Provenance(source="test"))


def test_one_recorder_for_a_real_terminal_and_a_simulated_one(terminal_wm, tmp_path: Path) -> None:
    actions = [ks("echo hello > notes.txt\n"), ks("cat notes.txt\n")]
    with TerminalEnv() as real:
        real_traj = _record(real, actions, seed=0)
    sim = SimEnv(terminal_wm, Scenario(domain="terminal", task="Keep notes", first_observation="root@sandbox:/workspace# "))
    sim_traj = _record(sim, actions, seed=0)
    for traj in (real_traj, sim_traj):
        assert traj.domain == "terminal" and [t.action for t in traj.turns] == actions
        assert all(t.started_at and t.duration_s is not None for t in traj.turns)
    assert "hello" in real_traj.turns[1].observation
    assert real_traj.initial_state and "Debian" in real_traj.initial_state
    assert sim_traj.turns[1].observation == screen("cat notes.txt", "hello")
    assert sim_traj.task_description == "Keep notes" and sim_traj.turns[0].metadata["turn"] == 1
    # The step info is the metadata, for either kind of environment.
    assert set(real_traj.turns[0].metadata) >= {"prompt", "events"}
    write_trajectories(tmp_path / "t.jsonl", [real_traj, sim_traj])
    assert len(read_trajectories(tmp_path / "t.jsonl", strict=True).items) == 2


def test_sim_record_and_the_wrapper_share_context_and_turn_building(terminal_wm) -> None:
    sim = SimEnv(terminal_wm, Scenario(domain="terminal", task="Keep notes", initial_state="notes.txt is absent"))
    rec = RecordTurns(sim)
    rec.reset(seed=1)
    rec.step(ks("echo hello > notes.txt\n"))
    own, wrapped = sim.record(trajectory_id="x"), rec.trajectory(trajectory_id="x", provenance=Provenance())
    assert own.context == wrapped.context == sim.scenario.context
    assert own.turns[0].observation == wrapped.turns[0].observation
    assert own.sim_scenario is not None and wrapped.sim_scenario is None


class _Color(enum.Enum):
    red = "r"


@dataclass
class _Point:
    x: int
    y: tuple[int, int]


class _Model(BaseModel):
    path: Path


def test_sanitize_info_converts_documented_types() -> None:
    info = {"t": (1, 2), "s": {3, 1}, "c": _Color.red, "p": PurePosixPath("/a"), "d": _Point(1, (2, 3)),
            "m": _Model(path=Path("/b")), "nested": {"k": [(1,)]}, "plain": [1, "x", None, 1.5, True]}
    assert sanitize_info(info) == {"t": [1, 2], "s": [1, 3], "c": "r", "p": "/a", "d": {"x": 1, "y": [2, 3]},
                                   "m": {"path": "/b"}, "nested": {"k": [[1]]}, "plain": [1, "x", None, 1.5, True]}


@pytest.mark.parametrize(("info", "where"), [
    ({"loss": float("nan")}, "loss is nan"),
    ({"raw": b"\x00"}, "raw is a bytes"),
    ({"obj": {"at": object()}}, "obj.at is a object"),
    ({"keys": {1: "x"}}, "non-string key 1"),
])
def test_sanitize_info_reports_what_it_cannot_store(info: dict, where: str) -> None:
    with pytest.raises(InfoNotJSON, match=re.escape(where)):
        sanitize_info(info)


class _Echo(Env):
    domain = "terminal"

    def __init__(self, info: dict[str, Any]):
        self.info = info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        return Reset("start", {})

    def step(self, action: str) -> Step:
        return Step(action, 0.0, action == "stop", False, self.info)

    def context(self) -> SimContext:
        return SimContext(task_description="echo", simulation_instruction="answer with the action")


def test_record_episode_is_the_wrapper_and_stops_at_the_end() -> None:
    traj = record_episode(_Echo({"n": (1, 2)}), ["a", "stop", "never"], trajectory_id="e", seed=4)
    assert [t.action for t in traj.turns] == ["a", "stop"] and traj.turns[0].metadata == {"n": [1, 2]}
    assert traj.provenance.seed == 4 and traj.simulation_instruction == "answer with the action"
    with pytest.raises(InfoNotJSON, match="handle"):
        record_episode(_Echo({"handle": object()}), ["a"], trajectory_id="e")


def test_unchanged_steps_are_dropped_or_fail_when_a_change_was_expected() -> None:
    from agentworld.envs.record import UnchangedStep

    rec = RecordTurns(_Echo({}), drop_unchanged=True)
    rec.reset()
    for action in ("a", "a ", "b"):
        rec.step(action)
    assert [t.action for t in rec.turns] == ["a", "b"] and rec.dropped == 1
    strict = RecordTurns(_Echo({}), drop_unchanged=True, expect_change=lambda action: action != "a ")
    strict.reset()
    strict.step("a")
    strict.step("a ")  # the same screen again, allowed for this action
    assert strict.dropped == 1 and len(strict.turns) == 1
    with pytest.raises(UnchangedStep, match="did not change after the action 'a'"):
        strict.step("a")


def test_sim_context_is_the_one_model_of_the_five_parts() -> None:
    # Trajectory keeps the parts as top-level fields (the file layout) of the same types.
    for name, f in SimContext.model_fields.items():
        assert Trajectory.model_fields[name].annotation == f.annotation, name
    ctx = SimContext(task_description="t", tools=[{"name": "x"}], simulation_instruction="slow")
    traj = Trajectory(id="a", domain="mcp", **ctx.model_dump())
    assert traj.context == ctx
    assert trajectory_system_prompt(traj) == build_system_prompt("mcp", ctx)
    sc = Scenario.from_trajectory(traj)
    assert sc.context == ctx and sc.task == "t"
    with pytest.raises(ValueError, match="task"):
        SimContext.of({"task": "t"})


OLD_LINE = ('{"schema_version": 1, "id": "old", "domain": "terminal", "provenance": {"source": "real", '
            '"environment": null, "task": null, "seed": 2, "agent": "m", "created_at": null, "finished": "done", '
            '"job_id": "j-1", "split": "test", "zz": 1}, "task_description": "", "action_space": null, "tools": null, '
            '"initial_state": null, "demonstrations": null, "simulation_instruction": null, "turns": [], '
            '"hidden_summary": "h", "sim_perturbations": null, "unknown": [1]}')


def test_declared_fields_read_old_files_and_write_them_back_unchanged() -> None:
    traj = Trajectory.model_validate_json(OLD_LINE)
    assert (traj.provenance.split, traj.provenance.job_id, traj.provenance.finished) == ("test", "j-1", "done")
    assert traj.hidden_summary == "h" and traj.sim_perturbations is None and traj.model_extra == {"unknown": [1]}
    assert dumps(traj) == OLD_LINE
    bare = json.loads(dumps(Trajectory(id="b", domain="terminal")))
    # Unset optional fields stay out of new files, as before they were declared.
    assert not {"split", "job_id", "finished"} & set(bare["provenance"])
    assert not {"final_answer", "bug", "hidden_summary", "sim_scenario", "sim_perturbations"} & set(bare)
    assert Provenance.model_validate({"job_id": 7}).job_id == "7"


def test_recorded_local_trajectories_round_trip_byte_for_byte() -> None:
    for path in sorted((ROOT / "benchmarks/local/trajectories").glob("*.jsonl"))[:2]:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()][:20]
        for ln in lines:
            assert dumps(Trajectory.model_validate_json(ln)) == ln


def test_declared_fields_are_not_read_with_getattr() -> None:
    fields = "split|job_id|hidden_summary|sim_scenario|sim_perturbations|trajectory_id|finished"
    pattern = re.compile(rf"getattr\([^)]*[\"']({fields})[\"']")
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "scripts").glob("*.sh")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files for i, ln in enumerate(p.read_text().splitlines(), 1)
            if pattern.search(ln)]
    assert not hits, hits
