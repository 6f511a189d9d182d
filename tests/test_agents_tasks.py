"""Agent tasks: the families, seeding, and the graders on hand-checked end states.

Real graders run against real environments (a sandboxed shell, the official MCP servers,
a fictional world's database): the task's scripted solution must pass every check, an
agent that stops at once must fail. Simulated graders read the ledger (terminal), replay
the accepted calls (MCP) or the submitted answer (search).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentworld.agents.policy import ScriptedPolicy
from agentworld.agents.runner import run_episode
from agentworld.agents.tasks import DOMAINS, TaskContext, expand, family, family_names, tasks
from agentworld.agents.tasks.search import leaks
from agentworld.agents.tasks.terminal import FAMILIES as TERMINAL
from agentworld.domains.terminal.keys import action_json
from agentworld.envs.base import make
from agentworld.envs.record import RecordTurns
from agentworld.records.trajectory import Provenance, Trajectory, Turn
from agentworld.sim.ledger import LedgerState
from agentworld.sim.worlds import FictionalWorld, build_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_world(tmp_path_factory.mktemp("world") / "w.sqlite", seed=3)


def test_at_least_30_families_across_three_domains() -> None:
    counts = {d: len(family_names(d)) for d in DOMAINS}
    assert sum(counts.values()) >= 30 and all(n >= 8 for n in counts.values()), counts
    assert expand(["terminal", "mcp-fs-edit", "terminal"]) == [*family_names("terminal"), "mcp-fs-edit"]
    with pytest.raises(KeyError, match="unknown task family 'nope'"):
        family("nope")


def test_tasks_are_seeded(world: Path) -> None:
    ctx = TaskContext(world=str(world))
    for name in family_names():
        a, b, c = (family(name).instance(s, ctx) for s in (4, 4, 5))
        assert (a.instruction, a.solution) == (b.instruction, b.solution)
        rec = a.to_record()
        assert rec["id"] == f"{name}-4" and rec["family"] == name and rec["domain"] in DOMAINS and rec["instruction"]
    # different seeds give different tasks (content, solution or checks) for almost every family
    def content(t) -> str:
        return repr((t.instruction, t.solution, getattr(t, "files", None), getattr(t, "checks", None)))

    differ = sum(content(family(n).instance(1, ctx)) != content(family(n).instance(2, ctx)) for n in family_names())
    assert differ >= len(family_names()) - 2


def test_search_tasks_need_a_world() -> None:
    with pytest.raises(ValueError, match="fictional world"):
        family("search-birth-year").instance(0)


@pytest.mark.parametrize("name", TERMINAL.names())
def test_terminal_checks_in_a_real_sandbox(name: str) -> None:
    """The solution's end state passes every check; the starting state fails at least one."""
    task = TERMINAL.get(name).instance(7)
    env = RecordTurns(make("terminal-v1"))
    try:
        for play in (True, False):
            env.reset(seed=7, options=task.reset_options)
            if play:
                for a in task.solution:
                    env.step(a)
            grade = task.grade(env, env.trajectory(trajectory_id="t", provenance=Provenance()))
            assert grade.decided_by == ["sandbox"]
            assert grade.success is play, (play, grade.to_record())
            assert (grade.reward == 1.0) is play
    finally:
        env.close()


def _sim_traj(*turns: tuple[str, str]) -> Trajectory:
    return Trajectory(id="s", domain="terminal", turns=[Turn(action=action_json((a + "\n", 1.0)), observation=o)
                                                        for a, o in turns])


class _SimLike:
    """Stands for a SimEnv at grading time: graders read only its ledger."""

    def __init__(self, ledger: LedgerState):
        self.ledger = ledger


def test_terminal_sim_grade_ledger_then_judges() -> None:
    from agentworld.sim.ledger import ledger_for

    task = TERMINAL.get("term-sort-names").instance(1)
    rules = ledger_for("terminal")
    want = "\n".join(sorted(task.files["names.txt"].split()))

    def play(*turns: tuple[str, str]) -> tuple[LedgerState, Trajectory]:
        ledger = LedgerState()
        task.seed_ledger(ledger)
        traj = _sim_traj(*turns)
        for t in traj.turns:
            rules.update(ledger, t.action, t.observation)
        return ledger, traj

    # `sort > file`: the ledger cannot know the content; the rule judge reads the agent's own cat
    ledger, traj = play(("sort names.txt > sorted.txt", "sort names.txt > sorted.txt\nroot@sandbox:/workspace# "),
                        ("cat sorted.txt", f"cat sorted.txt\n{want}\nroot@sandbox:/workspace# "))
    g = task.grade(_SimLike(ledger), traj)
    assert (g.success, g.decided_by) == (True, ["rule_judge"])
    ledger, traj = play(("sort names.txt > sorted.txt", "sort names.txt > sorted.txt\nroot@sandbox:/workspace# "))
    assert task.grade(_SimLike(ledger), traj).success is False  # no evidence on any screen
    # a reader whose output is redirected writes the file: what it shows is not the file's content
    ledger, traj = play(("cat names.txt | sort > sorted.txt", f"cat names.txt | sort > sorted.txt\n{want}\nroot@sandbox:/workspace# "))
    assert task.grade(_SimLike(ledger), traj).success is False
    # an LLM judge, when given, decides instead of the rule judge
    g = task.grade(_SimLike(ledger), traj, judge=lambda requirement, _t: "sorted.txt" in requirement)
    assert (g.success, g.decided_by) == (True, ["llm_judge"])
    # a write whose content is certain: the ledger decides, right or wrong
    escaped = want.replace("\n", "\\n")
    ledger, traj = play((f"printf '{escaped}\\n' > sorted.txt", "root@sandbox:/workspace# "))
    assert (task.grade(_SimLike(ledger), traj).success, task.grade(_SimLike(ledger), traj).decided_by) == (True, ["ledger"])
    ledger, traj = play(("echo wrong > sorted.txt", "root@sandbox:/workspace# "))
    assert (task.grade(_SimLike(ledger), traj).success, task.grade(_SimLike(ledger), traj).decided_by) == (False, ["ledger"])
    # a command the ledger cannot follow on a file it knows: not the ledger's to decide. A plain
    # `sed -i 's/a/b/g'` is applied exactly by the ledger now (9e811ef), so it decides that one;
    # a sed it cannot apply (an address) drops the fact, and a dropped fact is not an absent file
    replace = TERMINAL.get("term-replace-word").instance(1)
    old, new = replace.instruction.split("'")[1], replace.instruction.split("'")[3]
    edited = replace.files["notes.txt"].replace(old, new)
    shown = ("cat notes.txt", f"cat notes.txt\n{edited}root@sandbox:/workspace# ")
    for sed, decider in ((f"sed -i 's/{old}/{new}/g' notes.txt", "ledger"),
                         (f"sed -i '1,$s/{old}/{new}/g' notes.txt", "rule_judge"),
                         (f"perl -pi -e 's/{old}/{new}/g' notes.txt", "rule_judge")):
        for turns, want in ((((sed, "root@sandbox:/workspace# "),), decider == "ledger"),
                            (((sed, "root@sandbox:/workspace# "), shown), True)):
            ledger = LedgerState()
            replace.seed_ledger(ledger)
            traj = _sim_traj(*turns)
            for t in traj.turns:
                rules.update(ledger, t.action, t.observation)
            g = replace.grade(_SimLike(ledger), traj)
            assert (g.success, g.decided_by) == (want, [decider]), g.to_record()
    # the starting files are in the ledger: an untouched path is decided from them
    rename = TERMINAL.get("term-rename-file").instance(1)
    ledger = LedgerState()
    rename.seed_ledger(ledger)
    g = rename.grade(_SimLike(ledger), _sim_traj())
    assert g.decided_by == ["ledger"] and g.reward == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mcp-fs-move", "mcp-mem-relation", "mcp-git-commit"])
def test_mcp_end_state_checks_on_real_servers(name: str) -> None:
    """Real servers decide; replaying the same recorded calls (the simulated grade) agrees."""
    task = family(name).instance(2)
    env = RecordTurns(make("mcp-v1", servers=task.servers))
    try:
        for play in (True, False):
            env.reset(seed=2, options=task.reset_options)
            if play:
                for a in task.solution:
                    env.step(a)
            traj = env.trajectory(trajectory_id="t", provenance=Provenance())
            real = task.grade(env, traj)
            replayed = task.grade(_SimLike(LedgerState()), traj)
            assert real.decided_by == ["mcp"] and replayed.decided_by == ["replay"]
            assert real.success is play and replayed.success is play, (real.to_record(), replayed.to_record())
            assert real.reward == replayed.reward
    finally:
        env.close()


def test_mcp_replay_skips_failed_calls() -> None:
    task = family("mcp-fs-write").instance(0)
    [action] = task.solution
    failed = json.dumps({"content": [{"type": "text", "text": "Access denied"}], "isError": True})
    traj = Trajectory(id="m", domain="mcp", turns=[Turn(action=action, observation=failed)])
    assert task.grade(_SimLike(LedgerState()), traj).success is False
    ok = json.dumps({"content": [{"type": "text", "text": "Successfully wrote"}], "isError": False})
    traj.turns[0].observation = ok
    assert task.grade(_SimLike(LedgerState()), traj).success is True


def test_search_answers_come_from_the_database_and_never_leak(world: Path) -> None:
    w = FictionalWorld.load(world)
    for task in tasks(["search"], [0, 1, 2, 3], TaskContext(world=str(world))):
        assert task.answers, task.id
        assert leaks(task, w) == [], task.id
    # the grader: exact match for success, item F1 for reward
    t = family("search-employees").instance(0, TaskContext(world=str(world)))
    call = lambda ans: json.dumps({"name": "submit_answer", "arguments": {"answer": ans}})  # noqa: E731
    traj = Trajectory(id="q", domain="search", turns=[Turn(action=call(t.answers), observation="ok")])
    assert t.grade(_SimLike(LedgerState()), traj).success
    traj.turns[0].action = call(["Nobody Atall"])
    g = t.grade(_SimLike(LedgerState()), traj)
    assert (g.success, g.reward, g.decided_by) == (False, 0.0, ["world_db"])


def test_search_task_runs_in_the_real_fictional_env(world: Path) -> None:
    ctx = TaskContext(world=str(world))
    for name in ("search-founder-birthplace", "search-works-by"):
        task = family(name).instance(5, ctx)
        good = asyncio.run(run_episode(ScriptedPolicy("scripted"), task, mode="real"))
        idle = asyncio.run(run_episode(ScriptedPolicy("idle"), task, mode="real"))
        assert (good.success, good.reward, good.finished, good.error) == (True, 1.0, "final_action", None)
        assert (idle.success, idle.reward) == (False, 0.0)
