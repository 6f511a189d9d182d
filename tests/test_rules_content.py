"""Issue 26: the rule scorer reads content -- realism falls with contradictions, runaway
repetition and impossible values; consistency is earned, not given; invented lines and
wrong fixed results cost; runtime metadata counts by its format; stale answers are
stale; a terminal wait's first line is output. Real recorded samples where there are any
(``benchmarks/calibration/samples``, frozen copies of ``benchmarks/local``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.judge.rules import score_observation
from agentworld.judge.rules._common import impossible_values, runaway_repetition
from agentworld.records.bench import BenchSample, load_bench_dir

BENCH = Path(__file__).parents[1] / "benchmarks" / "calibration" / "samples"


@pytest.fixture(scope="module")
def samples() -> dict[str, BenchSample]:
    return {s.uid: s for s in load_bench_dir(BENCH, strict=True).samples}


def _terminal(history: list[tuple[str, str]], action: str, truth: str) -> BenchSample:
    keys = [f'[{{"keystrokes": "{a}\\n", "duration": 1}}]' for a, _ in history] + [f'[{{"keystrokes": "{action}\\n", "duration": 1}}]']
    return BenchSample(task="terminal", id=1, prompt=keys, response=[o for _, o in history] + [truth],
                       current_prompt=keys[-1], system_str="", turn_idx=len(keys), total_turns=len(keys))


P = "root@sandbox:/workspace#"


def test_runaway_repetition_lowers_realism(samples) -> None:
    s = samples["terminal/terminal-test-1000046:3/3"]  # ls -l /home
    lines = s.ground_truth.splitlines()
    runaway = "\n".join([lines[0], "0" * 486, lines[-1]])
    scores, details = score_observation(s, runaway)
    assert details["runaway"] and scores["realism"] <= 2
    assert runaway_repetition(s.ground_truth, s.ground_truth) == []


def test_invalid_git_mode_is_impossible() -> None:
    assert impossible_values("index bc55707..ec5f8c9 433977\n--- a/budget.py") == ["index bc55707..ec5f8c9 433977"]
    assert impossible_values("new file mode 100644\nindex bc55707..ec5f8c9 100755") == []


def test_contradiction_lowers_realism(samples) -> None:
    s = samples["mcp/mcp-test-1000056:2/2"]  # sequentialthinking 2 of 4
    wrong = s.ground_truth.replace('"totalThoughts": 4', '"totalThoughts": 3').replace('\\"totalThoughts\\": 4', '\\"totalThoughts\\": 3')
    scores, details = score_observation(s, wrong)
    assert details["contradictions"] and scores["realism"] < 5
    # One value changed shows twice (text and structuredContent) and counts once.
    assert scores["consistency"] == 3


def test_an_answer_earns_consistency_by_agreeing_with_the_session() -> None:
    s = _terminal([("x=5; y=7", P)], "echo $x $y", f"{P} echo $x $y\n5 7\n{P}")
    scores, _ = score_observation(s, f"{P} echo $x $y\nturn1\n{P}")
    assert scores["factuality"] <= 2 and scores["consistency"] <= 2
    assert score_observation(s, s.ground_truth)[0]["consistency"] == 5


def test_wrong_fixed_result_and_invented_lines_cost() -> None:
    ok = f"{P} sha256sum -c sums\ndata.txt: OK\n{P}"
    s = _terminal([("sha256sum -c sums", ok)], "sha256sum -c sums", ok)
    scores, _ = score_observation(s, ok.replace("OK", "FAILED"))
    assert sum(scores.values()) / 5 < 4.0
    listing = f"{P} ls\nREADME.md\nsetup.py\nsrc\ntests\n{P}"
    s = _terminal([("ls", listing)], "ls", listing)
    invented = listing.replace("tests\n", "tests\nnotes.txt\nbuild.log\ncache.db\ntodo.md\n")
    scores, details = score_observation(s, invented)
    assert details["invented_share"] > 0 and scores["factuality"] <= 4 and scores != dict.fromkeys(scores, 5)


def test_runtime_metadata_counts_by_its_format(samples) -> None:
    s = samples["terminal/terminal-test-1000046:3/3"]  # ls -l /home: sizes and times the session never showed
    other = s.ground_truth.replace("100 Nov 29 22:21", "4096 Dec  3 09:14")
    scores, _ = score_observation(s, other)
    assert scores["factuality"] >= 4


def test_a_wait_prints_output_not_an_echo(samples) -> None:
    s = samples["terminal/terminal-test-1000056:4/4"]  # empty keystrokes; a job prints "worker done"
    assert s.ground_truth.strip() == f"{P} worker done"
    garbled = "\n".join([P] * 40)
    scores, details = score_observation(s, garbled)
    assert details["completeness"] == 0 and scores["factuality"] == 1 and sum(scores.values()) / 5 < 2.5
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(scores, 5)


@pytest.mark.parametrize("uid", ["web/web-test-1000034:2/2", "os/os-test-1000023:5/5"])
def test_unchanged_screen_is_stale(samples, uid) -> None:
    s = samples[uid]
    scores, details = score_observation(s, s.history()[-1][1])
    assert details["unchanged_screen"] and scores["consistency"] <= 2


def test_stale_terminal_output_is_not_this_result(samples) -> None:
    s = samples["terminal/terminal-test-1000082:3/3"]
    lines = s.ground_truth.splitlines()
    prev = s.history()[-1][1].splitlines()
    stale = "\n".join([lines[0], *prev[1:-1], lines[-1]])
    scores, details = score_observation(s, stale)
    assert details["stale_output"] and scores["factuality"] <= 2 and scores["consistency"] <= 2
