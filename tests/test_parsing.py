"""Parser parity with the published evaluation: every case written out by hand."""

import pytest

from agentworld.parsing import (
    Status,
    parse_judgement,
    parse_prediction,
    parse_score,
    repair_json,
    split_reasoning,
    status_counts,
    strip_marker,
    verdict_scores,
)
from agentworld.records.verdict import DIMENSIONS

PO, PC = "<predicted_observation>", "</predicted_observation>"
M = "**Environment Observation:**"
C, U, T, X = Status.complete, Status.untagged, Status.truncated, Status.missing

# (raw output, expected observation, expected status)
PREDICTIONS = [
    # 1 a closed block
    (f"{PO}\nfile.txt\n{PC}", "file.txt", C),
    # 2 reasoning, then a closed block
    (f"<think>ls lists one file</think>\n{PO}\nfile.txt\n{PC}", "file.txt", C),
    # 3 two closed blocks: the last one
    (f"{PO}first{PC} x {PO}\nsecond\n{PC}", "second", C),
    # 4 no tags at all: the text is kept, as published
    ("total 0\nroot@host:/#", "total 0\nroot@host:/#", U),
    # 5 no tags, leading marker: marker stripped
    (f"{M}\nroot@host:/# echo hi\nhi", "root@host:/# echo hi\nhi", U),
    # 6 closed think then untagged text
    ("<think>it prints hi</think>\nhi\n", "hi", U),
    # 7 unclosed think followed by a block: the block is the answer
    (f"<think>the output is probably {PO}x{PC} hmm", "x", C),
    # 8 unclosed think, nothing after it: missing
    ("<think>I am still thinking about", None, X),
    # 9 nested think blocks hide a fake answer
    (f"<think>a <think>b</think> c {PO}NO{PC}</think>{PO}yes{PC}", "yes", C),
    # 10 an answer only inside reasoning: missing
    (f"<think>{PO}hidden{PC}</think>", None, X),
    # 11 an opened block never closed: truncated, partial text kept
    (f"<think>ok</think>{PO}\nline 1\nline 2", "line 1\nline 2", T),
    # 12 a closed block then a cut-off one: the cut-off one, truncated
    (f"{PO}old{PC}\n{PO}\nnew and cut", "new and cut", T),
    # 13 empty output
    ("", None, X),
    # 14 whitespace only
    ("  \n\t\n", None, X),
    # 15 marker inside the block, indentation inside kept
    (f"{PO}\n{M}\n  indented\nnext  \n{PC}", "  indented\nnext", C),
    # 16 orphan closing think (the template opened it): everything before is reasoning
    (f"reasoning about ls </think>\n{PO}a.txt{PC}", "a.txt", C),
    # 17 tags in any case
    ("<Predicted_Observation>X</PREDICTED_OBSERVATION>", "X", C),
    # 18 chat around a closed block is dropped
    (f"Sure! Here it is:\n{PO}\nok\n{PC}\nHope this helps.", "ok", C),
    # 19 the marker alone is nothing
    (f"{M}\n  \n", None, X),
    # 20 marker on the same line as the text, with spaces around
    (f"  {M}  hi there", "hi there", U),
    # 21 an empty closed block is an answer: the environment printed nothing
    (f"{PO}{PC}", "", C),
    # 22 a closer with no opener (the prompt opened the block)
    (f"a.txt\n{PC}", "a.txt", C),
    # 23 text before an unclosed think is kept, the think swallowed
    ("hi\n<think>and now I wonder", "hi", U),
    # 24 a leading line that only looks like the marker is kept
    ("**Environment Observation** (none)", "**Environment Observation** (none)", U),
]


@pytest.mark.parametrize(("raw", "observation", "status"), PREDICTIONS, ids=[f"p{i}" for i in range(1, len(PREDICTIONS) + 1)])
def test_prediction_cases(raw, observation, status):
    p = parse_prediction(raw)
    assert (p.observation, p.status) == (observation, status)
    assert p.ok == (status in (C, U))


def test_reasoning_is_kept_apart():
    p = parse_prediction(f"<think>maybe {PO}WRONG{PC}</think>{PO}right{PC}")
    assert p.observation == "right" and "WRONG" in p.reasoning
    p = parse_prediction(f"{PO}x{PC}", reasoning="split out")
    assert p.reasoning == "split out"
    visible, reasoning = split_reasoning("<think>a <think>b</think> c</think>tail")
    assert visible == "tail" and "b" in reasoning


def test_strip_marker_and_status_counts():
    assert strip_marker(f"\n {M}\nx\n") == "x\n"
    assert strip_marker("x") == "x"
    assert status_counts(["complete", Status.untagged, "complete", ""]) == {
        "complete": 2, "untagged": 1, "truncated": 0, "missing": 1, "unclosed": 0}


def _scores(**kw):
    return {d: kw.get(d, 0) for d in DIMENSIONS}


FULL = '"format": 5, "factuality": 4, "consistency": 5, "realism": 4, "quality": 3'
ALL = _scores(format=5, factuality=4, consistency=5, realism=4, quality=3)

# (raw verdict, expected parse status, expected scores or None when nothing parses)
VERDICTS = [
    # 1 a clean block
    (f'<final_evaluation>{{"strengths": "s", "weaknesses": "w", "scores": {{{FULL}}}}}</final_evaluation>', C, ALL),
    # 2 flat scores, no "scores" key
    (f"<final_evaluation>{{{FULL}}}</final_evaluation>", C, ALL),
    # 3 no tag: the JSON object in the text
    (f'Analysis done. {{"scores": {{{FULL}}}}} That is all.', U, ALL),
    # 4 unclosed tag
    (f'<final_evaluation>\n{{"scores": {{{FULL}}}}}', T, ALL),
    # 5 "4/5" strings
    ('<final_evaluation>{"scores": {"format": "4/5", "factuality": "2/5", "consistency": "5/5", "realism": "1/5", "quality": "3/5"}}</final_evaluation>',
     C, _scores(format=4, factuality=2, consistency=5, realism=1, quality=3)),
    # 6 numbers as strings
    ('<final_evaluation>{"scores": {"format": "5", "factuality": " 3 ", "consistency": "4.0", "realism": "2", "quality": "1"}}</final_evaluation>',
     C, _scores(format=5, factuality=3, consistency=4, realism=2, quality=1)),
    # 7 unquoted keys
    ("<final_evaluation>{scores: {format: 5, factuality: 4, consistency: 5, realism: 4, quality: 3}}</final_evaluation>", C, ALL),
    # 8 single quotes
    ("<final_evaluation>{'scores': {'format': 5, 'factuality': 4, 'consistency': 5, 'realism': 4, 'quality': 3}}</final_evaluation>", C, ALL),
    # 9 trailing commas and a code fence
    (f'<final_evaluation>\n```json\n{{"strengths": ["x",], "scores": {{{FULL},}},}}\n```\n</final_evaluation>', C, ALL),
    # 10 out of range: clamped
    ('<final_evaluation>{"scores": {"format": 7, "factuality": 0, "consistency": -2, "realism": 5, "quality": 10}}</final_evaluation>',
     C, _scores(format=5, factuality=1, consistency=1, realism=5, quality=5)),
    # 11 fractional: Python round (half to even)
    ('<final_evaluation>{"scores": {"format": 3.5, "factuality": 2.5, "consistency": 4.6, "realism": 1.2, "quality": "4.5"}}</final_evaluation>',
     C, _scores(format=4, factuality=2, consistency=5, realism=1, quality=4)),
    # 12 a missing dimension is invalid on its own
    ('<final_evaluation>{"scores": {"format": 5, "factuality": 4, "realism": 4, "quality": 3}}</final_evaluation>',
     C, _scores(format=5, factuality=4, realism=4, quality=3)),
    # 13 a fake verdict inside reasoning is ignored
    (f'<think><final_evaluation>{{"scores": {{"format": 1}}}}</final_evaluation></think><final_evaluation>{{"scores": {{{FULL}}}}}</final_evaluation>', C, ALL),
    # 14 several blocks: the last
    (f'<final_evaluation>{{"scores": {{"format": 1}}}}</final_evaluation> on reflection <final_evaluation>{{"scores": {{{FULL}}}}}</final_evaluation>', C, ALL),
    # 15 no JSON anywhere
    ("I give it a 4", X, None),
    # 16 a block without JSON
    ("<final_evaluation>scores are great</final_evaluation>", X, None),
    # 17 non-numbers and booleans are invalid dimensions
    ('<final_evaluation>{"scores": {"format": "good", "factuality": true, "consistency": null, "realism": [4], "quality": 4}}</final_evaluation>',
     C, _scores(quality=4)),
    # 18 keys in any case, Python literals
    ("<final_evaluation>{'Scores': None, 'FORMAT': 2, 'Factuality': 3, 'ok': True}</final_evaluation>", C, _scores(format=2, factuality=3)),
    # 19 a verdict cut off inside its JSON is a failure (retried), never a partial verdict
    ('<final_evaluation>{"scores": {"format": 4, "factuality": 4', X, None),
    # 20 a list, not an object
    ("<final_evaluation>[1, 2]</final_evaluation>", X, None),
    # 21 comments and "x out of 5"
    ('<final_evaluation>{\n// my scores\n"scores": {"format": "4 out of 5", "quality": 5}}</final_evaluation>', C, _scores(format=4, quality=5)),
]


@pytest.mark.parametrize(("raw", "status", "scores"), VERDICTS, ids=[f"v{i}" for i in range(1, len(VERDICTS) + 1)])
def test_verdict_cases(raw, status, scores):
    j = parse_judgement(raw)
    assert j.status is status
    if scores is None:
        assert not j.ok and j.data is None and j.error
    else:
        assert j.ok and verdict_scores(j.data, DIMENSIONS) == scores


@pytest.mark.parametrize(
    ("value", "score"),
    [(4, 4), (4.0, 4), ("4", 4), ("4/5", 4), (2.5, 2), (3.5, 4), (0.4, 1), (9, 5), (-1, 1), ("nan", 0),
     (float("inf"), 0), (True, 0), (None, 0), ("n/a", 0), ({}, 0)],
)
def test_parse_score(value, score):
    assert parse_score(value) == score


def test_repair_json_rejects_garbage():
    with pytest.raises(ValueError):
        repair_json("{not: valid: at all")


def test_an_open_block_the_model_stopped_in_is_unclosed_not_truncated():
    from agentworld.models.base import Completion
    from agentworld.models.runner import to_prediction
    from agentworld.parsing import with_finish_reason

    text = f"{PO}total 0\nroot@box:~#"
    kw = {"index": 0, "latency_s": 0.0, "backend": "b", "model": "m"}
    assert to_prediction(Completion(text, finish_reason="length"), **kw).status == "truncated"
    assert to_prediction(Completion(text, finish_reason="stop"), **kw).status == "unclosed"
    assert to_prediction(Completion(text), **kw).status == "truncated"  # no reason given: as before
    assert to_prediction(Completion(f"{PO}x{PC}", finish_reason="stop"), **kw).status == "complete"
    assert not Status.unclosed.usable and with_finish_reason(Status.complete, "stop") is Status.complete
