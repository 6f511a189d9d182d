"""Judging predictions: the judgement record, the offline rule scorer and the LLM judge."""

from typing import Any

from agentworld.judge.base import DIMENSIONS, Judgement, Scorer, clamp_score, sample_total
from agentworld.judge.rules import RuleScorer


def make_scorer(kind: str, backend: str, options: dict[str, Any], *, what: str = "scorer") -> Scorer:
    """The scorer a config names: ``rules`` (offline) or ``llm`` (an LLM judge on the
    ``backend`` spec with ``options``); ``what`` names the config field in the error."""
    if kind == "rules":
        return RuleScorer()
    if kind == "llm":
        from agentworld.judge.llm import LLMJudge
        from agentworld.models import load_backend

        return LLMJudge(load_backend(backend, **options))
    raise ValueError(f"unknown {what} {kind!r}: expected 'rules' or 'llm'")


def __getattr__(name: str):
    # The LLM judge pulls in the model runner; import it only when asked for.
    if name == "LLMJudge":
        from agentworld.judge.llm import LLMJudge

        return LLMJudge
    raise AttributeError(name)


__all__ = ["DIMENSIONS", "Judgement", "LLMJudge", "RuleScorer", "Scorer", "clamp_score", "make_scorer", "sample_total"]
