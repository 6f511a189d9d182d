"""``swe-v1`` on real repositories: injected bugs the tests catch, repairs, replays, collection."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs import make
from agentworld.envs.swe import REPOS, MissingSourceError, SweEnv, repos, tool_call
from agentworld.envs.swe.scripted import scripted_repair
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import read_trajectories

pytestmark = pytest.mark.sandbox

# What legitimately differs between two runs of the same episode: clock times in `ls -l`
# and pytest's durations, object addresses in tracebacks.
VOLATILE = [
    (re.compile(r"\b[A-Z][a-z]{2} [ \d]\d +(\d\d:\d\d|\d{4})\b"), "<mtime>"),
    (re.compile(r"\bin \d+\.\d+s\b"), "in <t>s"),
    (re.compile(r"0x[0-9a-f]{6,}"), "0x<addr>"),
]


def normalize(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return text


@pytest.fixture
def env():
    e = make("swe-v1")
    yield e
    e.close()


def test_reset_commits_a_bug_that_the_repositorys_own_tests_catch(env: SweEnv) -> None:
    task, info = env.reset(seed=7, options={"repo": "inflection"})
    assert info["repo"] == "inflection" and info["failing_tests"]
    assert "/workspace/inflection" in task and info["failing_tests"][0] in task
    m = env.bug.mutation
    obs = env.step(tool_call("bash", command="cd /workspace/inflection && git log --oneline && git status --short")).observation
    assert re.match(r"[0-9a-f]{7} Initial commit\n\[Current working directory: /workspace/inflection\]\n"
                    r"\[Command finished with exit code 0\]$", obs)
    res = env.step(tool_call("bash", command=REPOS["inflection"].test_command))
    assert res.info["exit_code"] == 1 and "failed" in res.observation
    assert f"FAILED {info['failing_tests'][0]}" in res.observation
    view = env.step(tool_call("str_replace_editor", command="view", path=f"/workspace/inflection/{m.file}",
                              view_range=[m.line, m.line])).observation
    assert view.endswith(f"{m.line:6}\t{m.mutated_line}\n")
    ctx = env.context()
    assert [t["name"] for t in ctx.tools or []] == ["bash", "str_replace_editor"]
    assert "pytest 9.0.3" in (ctx.initial_state or "")


def test_bad_actions_are_reported_to_the_agent(env: SweEnv) -> None:
    task, info = env.reset(seed=1, options={"repo": "parse", "bug": False})
    assert "bug" not in info and env.bug is None and "Get to know" in task
    for action, text in [("ls", "not a JSON tool call"), (tool_call("git", command="x"), "unknown tool 'git'"),
                         (tool_call("bash"), "Parameter `command` is required")]:
        res = env.step(action)
        assert res.observation.startswith("ERROR:\n") and text in res.observation and res.info["error"]


@pytest.mark.slow
def test_scripted_repair_goes_green_and_replays_identically(env: SweEnv) -> None:
    seed = 11
    traj = scripted_repair(env, seed=seed, trajectory_id="t", options={"repo": "isodate"})
    obs = [t.observation for t in traj.turns]
    assert len(obs) >= 6 and traj.tools and traj.initial_state
    suite = next(o for o in reversed(obs) if " passed" in o and "[Command finished with exit code 0]" in o)
    assert "failed" not in suite
    m = env.bug.mutation
    assert any(f"-{m.mutated_line}\n+{m.original_line}" in o for o in obs) or not any("diff --git" in o for o in obs)
    first_run = next(o for o in obs if "FAILED" in o or "Error" in o)
    assert first_run

    # Replay the recorded actions in a fresh episode with the same seed.
    replay = SweEnv()
    try:
        replay.reset(seed=seed, options={"repo": "isodate"})
        for turn in traj.turns:
            assert normalize(replay.step(turn.action).observation) == normalize(turn.observation), turn.action
    finally:
        replay.close()


def test_missing_sources_fail_with_the_command_that_fetches_them(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTWORLD_SWE_CACHE", str(tmp_path))
    with pytest.raises(MissingSourceError, match=r"python -m agentworld\.envs\.swe` once"):
        repos.sdist_path(REPOS["parse"])
    res = CliRunner().invoke(app, ["collect", "swe", "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2
    assert "not found" in res.output and "--download" in res.output


@pytest.mark.slow
def test_collect_swe_writes_benchmark_samples_and_resumes(tmp_path) -> None:
    args = ["collect", "swe", "--out", str(tmp_path / "swe.jsonl"), "--bench-dir", str(tmp_path),
            "--test-episodes", "1", "--episodes", "1", "--repo", "inflection", "--repo", "parse"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    trajs = list(read_trajectories(tmp_path / "swe.jsonl"))
    assert len(trajs) == 2 and {t.provenance.split for t in trajs} == {"train", "test"}
    # parse is a held-out repository, inflection a training one (agentworld.envs.split).
    assert {t.provenance.split: t.bug["repo"] for t in trajs} == {"train": "inflection", "test": "parse"}
    bench = load_bench_dir(tmp_path)
    samples = bench.samples
    assert samples and {s.task for s in samples} == {"swe"}
    assert all(s.trajectory_id.startswith("swe-test-") for s in samples)
    assert all("str_replace_editor" in s.system_str for s in samples)
    assert json.loads(samples[0].current_prompt)["name"] in {"bash", "str_replace_editor"}
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "2 already there" in res.output.replace("\n", " ")


@pytest.mark.slow
def test_committed_benchmark_trajectory_replays_in_the_real_environment() -> None:
    """The shipped local benchmark is what the environment really prints, today."""
    path = Path(__file__).parent.parent / "benchmarks" / "local" / "trajectories" / "swe.jsonl"
    held_out = [t for t in read_trajectories(path) if t.provenance.split == "test"]
    assert len(held_out) >= 20
    bench = load_bench_dir(path.parent.parent, domains=["swe"], strict=True)
    assert len(bench.samples) >= 100
    assert {s.trajectory_id for s in bench.samples} <= {t.id for t in held_out}
    traj = min(held_out, key=lambda t: len(t.turns))
    replay = SweEnv()
    try:
        replay.reset(seed=traj.provenance.seed, options={"repo": traj.bug["repo"]})
        assert replay.context().task_description == traj.task_description
        for turn in traj.turns:
            assert normalize(replay.step(turn.action).observation) == normalize(turn.observation), turn.action
    finally:
        replay.close()
