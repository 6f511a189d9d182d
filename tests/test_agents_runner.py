"""Episodes and the ``agentworld agent`` commands: a tiny hf policy and scripted policies in
the real terminal environment and in the simulator (a retrieval world model)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.agents.policy import ModelPolicy, ScriptedPolicy, load_policy
from agentworld.agents.rollout import markdown, read_episodes, summarize
from agentworld.agents.runner import run_episode
from agentworld.agents.stats import mean_t, wilson
from agentworld.agents.tasks import family
from agentworld.cli import app
from agentworld.models import GenerationConfig, WorldModel
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.records.trajectory import Trajectory, Turn


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # one checkpoint for every agents test module of the session (build_tiny_checkpoint reuses it)
    return build_tiny_checkpoint(tmp_path_factory.getbasetemp() / "agents-tiny")


def test_confidence_intervals() -> None:
    w = wilson(8, 10)
    assert w.value == 0.8 and abs(w.low - 0.4902) < 1e-3 and abs(w.high - 0.9433) < 1e-3  # 95% Wilson, by hand
    assert wilson(0, 5).low == 0.0 and wilson(5, 5).high == 1.0 and wilson(0, 0).n == 0
    m = mean_t([0.0, 0.5, 1.0, 0.5])
    assert m.value == 0.5 and 0.0 <= m.low < 0.5 < m.high <= 1.0


def test_tiny_hf_policy_in_the_real_terminal(tiny: Path) -> None:
    """A random tiny model writes no usable action: the episode ends after the allowed
    invalid replies, is still graded in the sandbox, and fails."""
    policy = load_policy(f"hf:{tiny}", config=GenerationConfig(max_tokens=12))
    assert isinstance(policy, ModelPolicy)
    task = family("term-write-file").instance(0)
    ep = asyncio.run(run_episode(policy, task, mode="real", max_invalid=2))
    assert ep.error is None, ep.error
    assert (ep.finished, ep.success, ep.reward, ep.grade["decided_by"]) == ("invalid_replies", False, 0.0, ["sandbox"])
    assert ep.trajectory is not None and Trajectory.model_validate(ep.trajectory).provenance.agent == policy.name


def test_scripted_and_idle_in_the_simulator(terminal_wm: WorldModel) -> None:
    task = family("term-make-dirs").instance(1)
    good = asyncio.run(run_episode(ScriptedPolicy("scripted"), task, mode="sim", world_model=terminal_wm))
    idle = asyncio.run(run_episode(ScriptedPolicy("idle"), task, mode="sim", world_model=terminal_wm))
    assert good.error is None and good.turns == len(task.solution)
    assert (good.success, good.grade["decided_by"]) == (True, ["ledger"])
    assert (idle.success, idle.reward, idle.turns) == (False, 0.0, 0)
    traj = Trajectory.model_validate(good.trajectory)
    assert traj.provenance.source == "sim" and traj.provenance.task == "term-make-dirs"


def test_tiny_hf_policy_in_the_simulator(tiny: Path, terminal_wm: WorldModel) -> None:
    policy = load_policy(f"hf:{tiny}", config=GenerationConfig(max_tokens=12))
    ep = asyncio.run(run_episode(policy, family("term-make-dirs").instance(0), mode="sim", world_model=terminal_wm,
                                 max_invalid=1))
    assert ep.error is None and ep.finished == "invalid_replies" and not ep.success


def test_a_broken_environment_is_an_episode_with_an_error() -> None:
    ep = asyncio.run(run_episode(ScriptedPolicy("scripted"), family("term-write-file").instance(0), mode="sim"))
    assert ep.finished == "error" and "world model" in (ep.error or "") and ep.reward == 0.0


def test_summary_has_the_gap_per_family() -> None:
    from agentworld.agents.runner import Episode

    eps = [Episode(key=f"{m}/f-{i}", mode=m, task={}, family="f", success=s, reward=float(s))
           for m, wins in (("real", [1, 0, 0, 0]), ("sim", [1, 1, 1, 0])) for i, s in enumerate(wins)]
    s = summarize(eps)
    assert s["families"]["f"]["gap"] == {"success": 0.5, "reward": 0.5}
    assert s["overall"]["real"]["success"]["value"] == 0.25 and s["overall"]["sim"]["success"]["n"] == 4
    assert "| f |" in markdown(s) and "+0.50" in markdown(s)


def test_cli_rollout_resumes_and_refuses_other_settings(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "roll.jsonl"
    args = ["agent", "rollout", "-t", "term-write-file", "-n", "2", "-p", f"hf:{tiny}", "-o", str(out), "--max-turns", "2",
            "--max-tokens", "12"]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "2 played now" in res.output
    eps, errors = read_episodes(out)
    assert len(eps) == 2 and not errors and {e.key for e in eps} == {"real/term-write-file-0", "real/term-write-file-1"}
    assert all(e.settings["policy"].startswith("hf:") and e.trajectory for e in eps)
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "0 played now" in res.output, res.output
    res = runner.invoke(app, [*args, "--temperature", "0.7"])
    assert res.exit_code == 2 and "other settings" in res.output


def test_cli_eval_real_and_sim_side_by_side(tmp_path: Path) -> None:
    from test_sim_fixtures import terminal_trajectories

    from agentworld.records.trajectory import write_trajectories

    src = tmp_path / "terminal.jsonl"
    write_trajectories(src, terminal_trajectories())
    report = tmp_path / "report.json"
    res = CliRunner().invoke(app, ["agent", "eval", "-t", "term-rename-file", "-t", "term-sort-names", "-n", "2",
                                   "-w", f"retrieval:{src},domain=terminal", "-o", str(tmp_path / "eval.jsonl"),
                                   "--report", str(report)])
    assert res.exit_code == 0, res.output
    summary = json.loads(report.read_text())
    assert summary["modes"] == ["real", "sim"]
    fam = summary["families"]["term-rename-file"]
    assert fam["real"]["success"]["value"] == 1.0 and fam["real"]["success"]["n"] == 2 and "gap" in fam
    assert report.with_suffix(".md").read_text().startswith("| family |")
    # perturbed simulation: the spec travels in the settings, the injections in the trajectory
    pert = Path(__file__).parents[1] / "configs" / "perturbations" / "terminal-faults.yaml"
    res = CliRunner().invoke(app, ["agent", "rollout", "-t", "term-make-dirs", "-n", "1", "-m", "sim", "-w",
                                   f"retrieval:{src},domain=terminal", "--perturbations", str(pert),
                                   "-o", str(tmp_path / "p.jsonl")])
    assert res.exit_code == 0, res.output
    [ep], _ = read_episodes(tmp_path / "p.jsonl")
    assert ep.settings["perturbations"]["rules"] and ep.error is None
    assert all("injections" in t["metadata"] for t in ep.trajectory["turns"])
    res = CliRunner().invoke(app, ["agent", "rollout", "-m", "sim", "--perturbations", str(tmp_path / "none.yaml"),
                                   "-o", str(tmp_path / "q.jsonl")])
    assert res.exit_code == 2 and "bad --perturbations" in res.output
    res = CliRunner().invoke(app, ["agent", "rollout", "-t", "search", "-n", "1", "-o", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "fictional world" in res.output
    res = CliRunner().invoke(app, ["agent", "rollout", "-t", "nope", "-o", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "unknown task family" in res.output


def test_model_judge_without_a_verdict_leaves_it_to_the_rule_judge(tiny: Path) -> None:
    """A judge model that answers neither YES nor NO gives no verdict; the rule judge decides."""
    from agentworld.agents.judge import model_judge
    from agentworld.agents.tasks.terminal import FAMILIES
    from agentworld.models import load_backend
    from agentworld.sim.ledger import LedgerState

    judge = model_judge(load_backend("hf", path=tiny), config=GenerationConfig(max_tokens=4))
    task = FAMILIES.get("term-sort-names").instance(0)
    traj = Trajectory(id="j", domain="terminal", task_description=task.instruction)
    assert judge("sorted.txt is sorted", traj) in (None, True, False)

    class SimLike:
        ledger = LedgerState()

    task.seed_ledger(SimLike.ledger)
    grade = task.grade(SimLike(), traj, judge=lambda _r, _t: None)
    assert grade.decided_by == ["ledger"]  # untouched path: decided from the starting files
    traj.turns.append(Turn(
        action='[{"keystrokes": "sort names.txt > sorted.txt\\n", "duration": 1}]', observation="root@sandbox:/workspace# "))
    grade = task.grade(SimLike(), traj, judge=lambda _r, _t: None)
    assert (grade.success, grade.decided_by) == (False, ["rule_judge"])
    # the model judge itself: it answers (llm_judge) or gives no verdict (rule_judge)
    assert task.grade(SimLike(), traj, judge=judge).decided_by[0] in ("llm_judge", "rule_judge")


def test_protocols_read_the_trained_tool_format() -> None:
    """What `agent train` teaches (tool calls to terminal/call_tool) is read at evaluation too."""
    from agentworld.agents.protocol import TerminalProtocol, ToolProtocol

    term = TerminalProtocol().parse('<tool_call>{"name": "terminal", "arguments": {"command": "ls -la"}}</tool_call>')
    assert json.loads(term.action or "")[0]["keystrokes"] == "ls -la\n"
    assert TerminalProtocol().parse('[{"keystrokes": "pwd\\n", "duration": 1}]').action
    assert TerminalProtocol().parse('{"done": true}').done and TerminalProtocol().parse("hmm").invalid
    tool = ToolProtocol().parse('<tool_call>{"name": "call_tool", "arguments": {"name": "read_graph", "arguments": "{}"}}</tool_call>')
    assert json.loads(tool.action or "") == {"name": "read_graph", "arguments": {}}
    assert ToolProtocol().parse("All done.").done


def test_a_world_model_failure_is_an_error_not_a_failed_task(mcp_wm: WorldModel, tmp_path: Path) -> None:
    """A simulator that cannot answer (a retrieval index without search turns) makes an
    episode with an error, left out of the statistics and played again on a rerun."""
    from agentworld.agents.tasks import TaskContext
    from agentworld.sim.worlds import build_world

    world = build_world(tmp_path / "world.sqlite", seed=1)
    task = family("search-birth-year").instance(0, TaskContext(world=str(world)))
    ep = asyncio.run(run_episode(ScriptedPolicy("scripted"), task, mode="sim", world_model=mcp_wm))
    assert ep.finished == "error" and "SimulatorError" in (ep.error or "")
    assert summarize([ep])["overall"]["sim"]["errors"] == 1
