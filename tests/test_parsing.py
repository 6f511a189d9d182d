import pytest

from agentworld.parsing import Status, parse_judgement, parse_prediction, repair_json, split_reasoning


def test_no_tags_is_missing():
    p = parse_prediction("total 0\nroot@host:/#")
    assert p.status is Status.missing and p.observation is None and not p.ok


def test_last_closed_block_wins():
    raw = "<predicted_observation>first</predicted_observation> x <predicted_observation>\nsecond\n</predicted_observation>"
    p = parse_prediction(raw)
    assert p.ok and p.observation == "second"


def test_fake_answer_inside_think_is_ignored():
    raw = ("<think>maybe <predicted_observation>WRONG</predicted_observation></think>"
           "<predicted_observation>right</predicted_observation>")
    p = parse_prediction(raw)
    assert p.observation == "right"
    assert "WRONG" in p.reasoning


def test_nested_think_blocks():
    raw = "<think>a <think>b</think> c <predicted_observation>NO</predicted_observation></think><predicted_observation>yes</predicted_observation>"
    visible, reasoning = split_reasoning(raw)
    assert visible == "<predicted_observation>yes</predicted_observation>"
    assert "NO" in reasoning and "b" in reasoning
    assert parse_prediction(raw).observation == "yes"


def test_unclosed_think_swallows_the_rest():
    p = parse_prediction("<think>I think the output is <predicted_observation>x</predicted_observation> hmm")
    assert p.status is Status.missing and p.observation is None
    assert "hmm" in p.reasoning


def test_orphan_closing_think_from_template():
    p = parse_prediction("reasoning about ls </think>\n<predicted_observation>a.txt</predicted_observation>")
    assert p.ok and p.observation == "a.txt" and p.reasoning == "reasoning about ls"


def test_unclosed_answer_is_truncated():
    p = parse_prediction("<think>ok</think><predicted_observation>\nline 1\nline 2")
    assert p.status is Status.truncated and not p.ok
    assert p.observation == "line 1\nline 2"


def test_marker_is_stripped_and_whitespace_inside_kept():
    raw = "<predicted_observation>\n**Environment Observation:**\n  indented\nnext  \n</predicted_observation>"
    assert parse_prediction(raw).observation == "  indented\nnext"


def test_server_side_reasoning_is_merged():
    p = parse_prediction("<predicted_observation>x</predicted_observation>", reasoning="split out")
    assert p.reasoning == "split out" and p.observation == "x"


def test_tags_are_case_insensitive():
    assert parse_prediction("<Predicted_Observation>X</PREDICTED_OBSERVATION>").observation == "X"


def test_judge_json_in_fence_with_trailing_commas():
    raw = """<think>the echo matches</think>
<final_evaluation>
```json
{
  "strengths": ["exact echo",],
  "weaknesses": [],
  "scores": {"format": 5, "factuality": 4, "consistency": 5, "realism": 4, "quality": 4,},
}
```
</final_evaluation>"""
    j = parse_judgement(raw)
    assert j.ok and j.data["scores"]["factuality"] == 4 and j.data["strengths"] == ["exact echo"]


def test_judge_single_quotes_and_python_literals():
    j = parse_judgement("<final_evaluation>{'scores': {'format': 3}, 'ok': True, 'note': None}</final_evaluation>")
    assert j.ok and j.data == {"scores": {"format": 3}, "ok": True, "note": None}
    j = parse_judgement("<final_evaluation>{'scores': {'format': 3}, 'flag': true}</final_evaluation>")
    assert j.ok and j.data["flag"] is True


def test_judge_failures_are_reported():
    assert parse_judgement("I give it a 4").status is Status.missing
    assert parse_judgement("<final_evaluation>{\"scores\": {").status is Status.truncated
    bad = parse_judgement("<final_evaluation>scores are great</final_evaluation>")
    assert not bad.ok and bad.error
    assert not parse_judgement("<final_evaluation>[1, 2]</final_evaluation>").ok


def test_repair_json_rejects_garbage():
    with pytest.raises(ValueError):
        repair_json("{not: valid: at all")
