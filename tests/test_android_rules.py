"""The android rule scorer on the recorder's HTML-like rendering (one element a line,
self-closing ``<input .../>``, escaped text), over hand-made screens
(tests/fixtures/android/handmade_clock_*.xml, written by hand)."""

from __future__ import annotations

from pathlib import Path

from agentworld.envs.android import parse_uiautomator, render
from agentworld.judge import DIMENSIONS, RuleScorer
from agentworld.judge.rules import rules_for
from agentworld.judge.rules.android import parse_tree
from agentworld.parsing import Status
from agentworld.records.bench import BenchSample
from agentworld.records.prediction import Prediction

FIXTURES = Path(__file__).parent / "fixtures" / "android"
scorer = RuleScorer()
ACTIONS = ['{"action": "tap", "element": 1}', '{"action": "tap", "element": 5}',
           '{"action": "type", "text": "Gym & swim", "element": 2}']


def _screen(i: int) -> str:
    return render(parse_uiautomator((FIXTURES / f"handmade_clock_{i}.xml").read_text())).text


def _sample(turn: int) -> BenchSample:
    screens = [_screen(i) for i in (1, 2, 3)]
    return BenchSample(task="android", id="clock", prompt=ACTIONS, response=screens, current_prompt=ACTIONS[turn - 1],
                       system_str="", turn_idx=turn, total_turns=3)


def _score(sample: BenchSample, text: str) -> dict[str, int]:
    return scorer.score_sync(sample, Prediction(text=text, observation=text, status=Status.complete)).scores


def test_the_real_screen_scores_five() -> None:
    for turn in (1, 2, 3):
        s = _sample(turn)
        assert _score(s, s.ground_truth) == dict.fromkeys(DIMENSIONS, 5), turn


def test_void_elements_either_way_and_unbalanced_markup() -> None:
    for text in ('<div id="0"><img id="1"/><input id="2"></div>', '<div id="0"><input id="2"></input></div>'):
        tree = parse_tree(text)
        assert not tree.errors and not tree.stack, text
    s = _sample(2)
    unclosed = s.ground_truth.replace("</div>", "")
    assert _score(s, unclosed)["format"] < 5


def test_typed_text_is_determined_and_checked_unescaped() -> None:
    s = _sample(3)
    rules = rules_for("android")
    determined = rules.determined(s)
    assert "Gym & swim" in determined and "type" not in determined  # the gesture kind is no value
    wrong = s.ground_truth.replace("Gym &amp; swim", "Gym")
    assert rules.answers_action(s.ground_truth, s) is None
    assert "Gym & swim" in rules.answers_action(wrong, s)
    good, bad = _score(s, s.ground_truth), _score(s, wrong)
    assert bad["factuality"] < good["factuality"] and bad["consistency"] < good["consistency"]


def test_units_are_elements_whatever_the_layout() -> None:
    rules = rules_for("android")
    indented = _screen(2)
    one_line = indented.replace("\n", "").replace("  ", "")
    assert rules.units(indented) == rules.units(one_line) and len(rules.units(indented)) == 5


def test_prediction_parser_keeps_the_markup() -> None:
    from agentworld import parse_prediction

    screen = _screen(3)
    wrapped = f"<think>the label was typed</think><predicted_observation>**Environment Observation:**\n{screen}</predicted_observation>"
    assert (parse_prediction(wrapped).status, parse_prediction(wrapped).observation) == (Status.complete, screen)
    assert parse_prediction(screen).observation == screen  # untagged: kept, as the published parser does
