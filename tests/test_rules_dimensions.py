"""What each rule-scorer dimension measures, on real recorded sessions (the frozen
calibration samples): graded credit for the part of the real output reproduced, the
frame (echo line, prompt, footer) worth little on its own, stale output, another tool's
kind of answer, a broken results page, and quality as the weakest side of an answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.judge.rules import rules_for, score_observation
from agentworld.judge.rules._common import mentions
from agentworld.records.bench import load_bench_dir
from agentworld.records.verdict import DIMENSIONS

BENCH = Path(__file__).parents[1] / "benchmarks" / "calibration" / "samples"


@pytest.fixture(scope="module")
def samples():
    return {s.uid: s for s in load_bench_dir(BENCH, strict=True).samples}


def test_factuality_grows_with_the_share_of_the_output_reproduced(samples) -> None:
    s = samples["terminal/terminal-test-1000046:6/6"]  # userdel -r carol && ls /home
    echo, message, listing, prompt = s.ground_truth.strip("\n").splitlines()
    frame_only = f"{echo}\n{prompt}"
    half = f"{echo}\n{listing}\n{prompt}"
    fact = [score_observation(s, p)[0]["factuality"] for p in (frame_only, half, s.ground_truth)]
    # The echo line and prompt alone are little of what the command did.
    assert fact[0] <= 2 < fact[1] < fact[2] == 5, fact
    scores, details = score_observation(s, frame_only)
    assert details["frame_found"] == 1.0 and details["open_match"] == 0.0
    assert scores["quality"] <= 2 and details["completeness"] == 0.0
    assert rules_for("terminal").body(s.ground_truth) == f"{message}\n{listing}"


def test_output_repeated_from_an_earlier_turn_is_not_consistent(samples) -> None:
    s = samples["terminal/terminal-test-1000003:3/3"]  # ./len after ./len judy printed length: 4
    stale = "root@sandbox:/workspace# ./len\nlength: 4\nroot@sandbox:/workspace#"
    scores, details = score_observation(s, stale)
    assert details["stale_output"] and scores["consistency"] <= 3 and scores["factuality"] <= 2
    # The real output is new, so the truth itself is not stale.
    assert score_observation(s, s.ground_truth)[1]["stale_output"] is None


def test_another_tools_kind_of_answer_is_off_action(samples) -> None:
    search = samples["search/search-test-1000046:1/1"]  # web_search
    memory_answer = "1 entries:\n- first: a value stored earlier"
    scores, details = score_observation(search, memory_answer)
    assert "memory answer" in details["off_action"]
    assert scores["consistency"] == 1 and scores["realism"] == 1 and scores["quality"] == 1
    swe = samples["swe/swe-test-1000015:3/3"]  # grep -rn over the package
    created = "File created successfully at: /workspace/toolz/toolz/notes.py"
    scores, details = score_observation(swe, created)
    assert "created answer" in details["off_action"] and scores["realism"] == 1
    # Text neither the editor nor the shell prints (no editor message, no footer).
    scores, details = score_observation(swe, "The grep command searches the package for the function.")
    assert "neither tool" in details["off_action"] and scores["consistency"] == 1


def test_off_action_output_of_the_right_kind_keeps_some_realism(samples) -> None:
    s = samples["mcp/mcp-test-1000005:1/1"]  # echo "hello delta"
    other = s.ground_truth.replace("delta", "zephyr")
    scores, details = score_observation(s, other)
    # Issue 26: another message echoed contradicts the call, which lowers realism (2, where
    # another kind of output is 1); both labellers put it at 3 and 1 respectively.
    assert details["off_action"] and scores["consistency"] == 1 and scores["realism"] == 2
    assert score_observation(s, s.ground_truth.replace("delta", "zephyr").replace("Echo", "Result"))[0]["realism"] <= 2


def test_results_page_with_fields_out_of_their_blocks_is_broken(samples) -> None:
    s = samples["search/search-test-1000045:4/4"]
    lines = s.ground_truth.splitlines()
    # Every block's header moved below its Title: the same lines, no longer a results page.
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("[") and i + 1 < len(lines) and lines[i + 1].startswith("Title:"):
            blocks += [lines[i + 1], lines[i]]
            i += 2
        else:
            blocks.append(lines[i])
            i += 1
    broken = "\n".join(blocks)
    scores, details = score_observation(s, broken)
    assert details["format"]["well_formed"] == 0.0
    assert scores["format"] <= 3 and scores["realism"] <= 3
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(DIMENSIONS, 5)


def test_action_values_match_as_whole_words() -> None:
    assert not mentions("- first: groups_list(1): flags", "list")
    assert mentions("Removed 'list'.", "list")
    assert mentions("cat /srv/a.txt", "/srv/a.txt") and mentions("f(1, 2, 3)", "(1, 2, 3)")


def test_other_text_where_the_session_fixes_the_output_is_not_realistic(samples) -> None:
    s = samples["terminal/terminal-test-1000037:1/1"]  # cat stats.py; the initial state shows its text
    ran = "root@sandbox:/workspace# cat stats.py\ncount 3\nmean 2.0\nmax 3\nroot@sandbox:/workspace#"
    scores, details = score_observation(s, ran)  # what running the script prints, not the file
    assert details["determined_share"] >= 0.5 and details["determined_found"] == 0
    assert scores["realism"] <= 2 and scores["factuality"] <= 2
    # Half the file read back is this command's output, only incomplete.
    lines = s.ground_truth.splitlines()
    half = "\n".join([*lines[:4], lines[-1]])
    assert score_observation(s, half)[0]["realism"] >= 4
