"""Judging predictions: the judgement record, the offline rule scorer and the LLM judge."""

from agentworld.judge.base import DIMENSIONS, Judgement, Scorer, clamp_score, sample_total
from agentworld.judge.rules import RuleScorer

__all__ = ["DIMENSIONS", "Judgement", "RuleScorer", "Scorer", "clamp_score", "sample_total"]
