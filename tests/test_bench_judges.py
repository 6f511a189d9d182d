"""Judges side by side keep apart: same-named judges on other endpoints get the endpoint added."""

from __future__ import annotations

import pytest

from agentworld.bench.judges import JudgeNameClash, distinct_judge_names
from agentworld.judge import RuleScorer
from agentworld.judge.llm import LLMJudge
from agentworld.models import WorldModel, load_backend


def _judge(url: str, name: str | None = None) -> LLMJudge:
    # Never called: the port is unused, only the judge's name and endpoint matter here.
    return LLMJudge(WorldModel(load_backend("openai", model="judge", base_url=url)), name=name)


def test_same_model_on_two_endpoints_gets_the_endpoint_in_its_name():
    a, b = _judge("http://127.0.0.1:9/v1"), _judge("http://127.0.0.1:10/v1")
    rules = RuleScorer()
    distinct_judge_names([rules, a, b])
    assert a.name != b.name and a.name.endswith("@http://127.0.0.1:9/v1") and b.name.endswith("@http://127.0.0.1:10/v1")
    assert rules.name == RuleScorer().name


def test_distinct_names_are_left_alone_and_a_left_clash_is_an_error():
    a, b = _judge("http://127.0.0.1:9/v1", "A"), _judge("http://127.0.0.1:9/v1", "B")
    distinct_judge_names([a, b])
    assert (a.name, b.name) == ("A", "B")
    with pytest.raises(JudgeNameClash, match="two judges are named"):
        distinct_judge_names([_judge("http://127.0.0.1:9/v1"), _judge("http://127.0.0.1:9/v1")])
    with pytest.raises(JudgeNameClash):
        distinct_judge_names([RuleScorer(), RuleScorer()])
