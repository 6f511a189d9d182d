"""Judging predictions: the judgement record, the offline rule scorer and the LLM judge."""

from agentworld.judge.base import DIMENSIONS, Judgement, Scorer, clamp_score, sample_total
from agentworld.judge.rules import RuleScorer


def __getattr__(name: str):
    # The LLM judge pulls in the model runner; import it only when asked for.
    if name == "LLMJudge":
        from agentworld.judge.llm import LLMJudge

        return LLMJudge
    raise AttributeError(name)


__all__ = ["DIMENSIONS", "Judgement", "LLMJudge", "RuleScorer", "Scorer", "clamp_score", "sample_total"]
