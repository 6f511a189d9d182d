"""The rule scorer on screen domains (web pages, desktop accessibility trees), on real
recorded sessions (the frozen calibration samples): the initial state is part of the
session, a page or desktop the session does not lead to answers another action, the
screen before the action is stale but not a contradiction, broken trees and impossible
boxes are not realistic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentworld.judge.rules import rules_for, score_observation
from agentworld.judge.rules._common import session_text
from agentworld.prompts import INITIAL_STATE_TITLE, prompt_section
from agentworld.records.bench import load_bench_dir
from agentworld.records.verdict import DIMENSIONS

BENCH = Path(__file__).parents[1] / "benchmarks" / "calibration" / "samples"


@pytest.fixture(scope="module")
def samples():
    return {s.uid: s for s in load_bench_dir(BENCH, strict=True).samples}


def test_the_initial_state_is_part_of_the_session(samples) -> None:
    s = samples["os/os-test-1000018:1/1"]  # ctrl+end, the first turn: the editor on memo65.txt
    initial = prompt_section(s.system_str, INITIAL_STATE_TITLE)
    assert "Started: mousepad memo65.txt" in initial and "## " not in initial
    assert initial in session_text(s)
    # Another recorded document in the same editor state (saved, text focused).
    other = samples["os/os-test-1000009:3/3"].ground_truth
    scores, details = score_observation(s, other)
    assert "memo65.txt" in details["off_action"] and scores["consistency"] == 1 and scores["factuality"] <= 2
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(DIMENSIONS, 5)
    # A prompt written another way (published records) has no such section.
    assert prompt_section("You are a world model.\nInitial state: none\n", INITIAL_STATE_TITLE) == ""


def test_a_page_the_session_does_not_lead_to_answers_another_action(samples) -> None:
    s = samples["web/web-test-1000018:3/3"]  # click('164'): the 'next' link of base64 -> binascii
    assert "url='http://docs.test/library/binascii.html'" in s.history()[-1][1]
    other_page = samples["web/web-test-1000006:4/4"].ground_truth  # the tabnanny page
    scores, details = score_observation(s, other_page)
    assert "binascii.html" in details["off_action"]
    assert scores["consistency"] == 1 and scores["factuality"] <= 2 and scores["realism"] <= 3
    assert score_observation(s, s.ground_truth)[0] == dict.fromkeys(DIMENSIONS, 5)


def test_results_without_the_text_the_session_typed_answer_another_search(samples) -> None:
    s = samples["web/web-test-1000031:4/4"]  # Enter after fill('24', 'tkinter.filedialog')
    other_search = samples["web/web-test-1000005:3/3"].ground_truth  # results for 'math'
    scores, details = score_observation(s, other_search)
    assert "tkinter.filedialog" in details["off_action"] and scores["consistency"] == 1
    assert score_observation(s, s.ground_truth)[1]["off_action"] is None


def test_the_screen_before_the_action_is_stale_not_contradicted(samples) -> None:
    s = samples["web/web-test-1000011:2/2"]  # scroll(0, 600)
    before = s.history()[-1][1]
    scores, details = score_observation(s, before)
    assert details["unchanged_screen"] and details["stale_output"]
    # Its lines are the session itself: none counts as a session value changed.
    assert details["contradictions"] == []
    assert scores["realism"] <= 3 and scores["format"] == 5 and 2 <= scores["consistency"] <= 3
    assert not score_observation(s, s.ground_truth)[1]["unchanged_screen"]


def test_a_broken_tree_is_neither_well_formed_nor_realistic(samples) -> None:
    s = samples["os/os-test-1000014:3/3"]  # the Edit menu opened
    lines = s.ground_truth.splitlines()
    halved = "\n".join([lines[0], *lines[2::2]])  # nodes lose their parents
    scores, details = score_observation(s, halved)
    assert any("nested under nothing" in m for m in details["malformed"])
    assert scores["format"] <= 3 and scores["realism"] == 1
    cut = s.ground_truth[: s.ground_truth.index("343x25") + 2]  # cut inside a box: "(359, 192) 34"
    assert any("no geometry" in m for m in score_observation(s, cut)[1]["malformed"])
    web = samples["web/web-test-1000031:4/4"]
    cut = web.ground_truth[: web.ground_truth.index("'tkinter.filedialog'") + 5]
    assert any("cut off" in m for m in score_observation(web, cut)[1]["malformed"])
    # No recorded observation breaks these rules.
    for sample in samples.values():
        if sample.domain in ("web", "os"):
            rules = rules_for(sample.domain)
            for _, obs in [*sample.history(), (sample.action, sample.ground_truth)]:
                assert rules.malformed(obs, sample) == [] and rules.impossible(obs, sample) == [], sample.uid


def test_impossible_boxes_and_headers(samples) -> None:
    s = samples["os/os-test-1000025:1/1"]  # Xvfb 1280x800
    off_screen = s.ground_truth.replace("(319, 147) 642x505", "(919, 147) 642x505")
    scores, details = score_observation(s, off_screen)
    assert details["impossible_values"] == ["(919, 147) 642x505"] and scores["realism"] <= 2
    padded = s.ground_truth.replace("(326, 195)", "(326, 095)")
    assert score_observation(s, padded)[1]["impossible_values"] == ["(326, 095) 628x17"]
    web = samples["web/web-test-1000034:2/2"]
    renumbered = re.sub(r"^Tabs: \[0\]", "Tabs: [3]", web.ground_truth, flags=re.M)
    assert score_observation(web, renumbered)[1]["impossible_values"] == ["tabs numbered [3]"]
    past_end = web.ground_truth.replace("y=0 of page 1280x720", "y=900 of page 1280x720")
    assert score_observation(web, past_end)[1]["impossible_values"]


def test_text_that_is_no_page_or_desktop_is_another_kind_of_output(samples) -> None:
    web = samples["web/web-test-1000001:4/4"]
    rules = rules_for("web")
    assert rules.kind(web.ground_truth, web) == "output"
    failed = samples["web/web-test-1000018:3/3"].history()[0][1]  # a click's error, then the page
    assert failed.startswith("Error: Locator.click") and rules.kind(failed, web) == "error"
    scores, details = score_observation(web, "105\n1100\n1111\n1080")
    assert details["kind"]["prediction"] == "text" and scores["realism"] == 1
    desktop = samples["os/os-test-1000025:1/1"]  # typing two lines into an empty editor
    typed_only = "timber delta delta\nopal nectar violet jasper summit"
    assert rules_for("os").kind(typed_only, desktop) == "text"
    assert rules_for("os").kind(desktop.ground_truth, desktop) == "output"
