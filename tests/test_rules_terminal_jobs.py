"""The rule scorer's terminal rules of round 4, on real recorded sessions (the frozen
calibration samples): bash's job notices name the session's own background jobs and
come in the shapes bash prints, and an earlier command's output under this command's
echo line is that command's kind of output."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.domains.terminal.jobs import job_contradictions, malformed_job_lines, session_jobs
from agentworld.domains.terminal.keys import action_json
from agentworld.judge.rules import rules_for, score_observation
from agentworld.records.bench import load_bench_dir
from agentworld.records.verdict import DIMENSIONS

ROOT = Path(__file__).parents[1]
BENCH = ROOT / "benchmarks" / "calibration" / "samples"


@pytest.fixture(scope="module")
def samples():
    return {s.uid: s for s in load_bench_dir(BENCH, strict=True).samples}


def test_session_jobs_follow_launches_and_ended_notices(samples) -> None:
    s = samples["terminal/terminal-test-1000072:7/7"]  # sleep 53 &, a worker, kill %1, jobs, wait
    assert session_jobs(s.history()[:1]) == {1: "sleep 53"}  # `sleep 53 & echo "started $!"`: [1] 3
    assert session_jobs(s.history()[:3]) == {1: "sleep 53", 2: "(sleep 1; echo worker done)"}
    assert session_jobs(s.history()) == {}  # both ended: [1]- Terminated, [2]+ Done
    # Redirections and && start no job; `a && b &` starts the whole list.
    assert session_jobs([(action_json(("make 2>&1 && ls &> log\n", 1.0)), "[1] 7")]) == {}
    assert session_jobs([(action_json(("cd /x && make &\n", 1.0)), "[1] 7")]) == {1: "cd /x && make"}


def test_a_launch_numbered_as_a_running_job_contradicts_the_session(samples) -> None:
    s = samples["terminal/terminal-test-1000048:3/3"]  # (sleep 1; echo worker done) & while sleep 53 is job 1
    echo, launch, prompt = s.ground_truth.strip("\n").splitlines()
    assert launch == "[2] 4" and job_contradictions([launch], s.history(), s.action) == []
    found = job_contradictions(["[1] 4"], s.history(), s.action)
    assert found and "job 1 ('sleep 53')" in found[0]
    scores, details = score_observation(s, f"{echo}\n[1] 4\n{prompt}")
    assert details["contradictions"] and scores["consistency"] <= 3
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(DIMENSIONS, 5)


def test_a_notice_for_a_job_the_session_never_started_is_inconsistent(samples) -> None:
    s = samples["terminal/terminal-test-1000048:3/3"]
    echo = s.ground_truth.splitlines()[0]
    notice = "[1]+  Terminated              nohup ./api-worker > /dev/null 2>&1"
    scores, details = score_observation(s, f"{echo}\n{notice}")
    assert any("never ran" in c for c in details["contradictions"])
    assert scores["consistency"] <= 3 and scores["factuality"] == 1
    # The session's own job, in jobs -l's shape, is not in question.
    assert job_contradictions(["[1]+     3 Running                 sleep 53 &"], s.history(), s.action) == []


def test_job_lines_bash_never_prints_are_malformed(samples) -> None:
    s = samples["terminal/terminal-test-1000048:3/3"]
    echo, _, prompt = s.ground_truth.strip("\n").splitlines()
    scores, details = score_observation(s, f"{echo}\n[1] 1 Done\n{prompt}")
    assert details["malformed"] == ["[1] 1 Done"] and scores["realism"] <= 2 and scores["format"] <= 3
    # No recorded screen of the local benchmark or the calibration set breaks the rule, and
    # every real notice agrees with the session's jobs.
    rules = rules_for("terminal")
    local = load_bench_dir(ROOT / "benchmarks" / "local", strict=True).samples
    for sample in [*samples.values(), *local]:
        if sample.domain != "terminal":
            continue
        assert rules.malformed(sample.ground_truth, sample) == [], sample.uid
        assert malformed_job_lines(o for _, o in sample.history()) == [], sample.uid
        body = rules.body(sample.ground_truth).splitlines()
        assert job_contradictions(body, sample.history(), sample.action) == [], sample.uid


def test_an_earlier_commands_output_is_not_this_commands_kind(samples) -> None:
    s = samples["terminal/terminal-test-1000020:7/7"]  # kill %1 && wait after a ps table
    echo, prompt = s.ground_truth.splitlines()[0], s.ground_truth.splitlines()[-1]
    ps_table = rules_for("terminal").body(s.history()[-1][1])
    scores, details = score_observation(s, f"{echo}\n{ps_table}\n{prompt}")
    assert details["stale_output"] and "'ps'" in details["other_command_output"]
    assert scores["realism"] <= 3
    # The same program run again prints its own kind of output: stale, but of this kind.
    same = samples["terminal/terminal-test-1000003:3/3"]  # ./len after ./len judy printed length: 4
    scores, details = score_observation(same, "root@sandbox:/workspace# ./len\nlength: 4\nroot@sandbox:/workspace#")
    assert details["stale_output"] and details["other_command_output"] is None
