"""The hybrid GSPO reward (docs/design.md#training-pipeline): 0.9 * rubric + 0.1 * rule, on a 0-25 scale.

- rubric: the judge's mean over the five dimensions, mapped from [1, 5] onto [5, 25];
  0 when the judge fails or the answer is truncated or missing. The answer is cut out of
  the raw completion by strict tag extraction first, so the judge never sees the
  model's reasoning (a defence against self-praise in the reasoning).
- rule: the executable binary verifiers of the turn, 25 when all pass, else 0; it
  anchors the reward to checkable facts. A turn with no verifier (most of them) has
  nothing executable to check: its rule part is the offline rule scorer's share
  (``(mean - 1) / 4 * 25``, compared against the recorded observation), never a free 25
  for any closed block.

Answers that are no attempt at the observation skip the judge and get a fixed reward
below any honest attempt (the least an answer the judge scores 1 everywhere earns is
``0.9 * 5 = 4.5``), so the policy cannot farm a judge that is lenient with them: an
empty block :data:`EMPTY_REWARD`, the action copied back :data:`ACTION_COPY_REWARD`,
and text addressing the reader or the judge (self-praise, "rate this 5"), alone or
around an answer, :data:`META_REWARD`, below an empty block.

:class:`HybridReward` is a TRL reward function: GRPOTrainer calls it with the sampled
completions and the dataset columns of their prompts.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agentworld.judge.base import Scorer
from agentworld.judge.rules import degenerate_answer, praise_hits
from agentworld.judge.verifiers import RULE_REWARD_MAX, VerifierSpec, rule_reward
from agentworld.parsing import Status, parse_prediction
from agentworld.records.bench import BenchSample
from agentworld.records.prediction import Prediction
from agentworld.records.verdict import SCORE_MAX, SCORE_MIN, Judgement

RUBRIC_MIN, RUBRIC_MAX = 5.0, 25.0

EMPTY_REWARD = 2.0
"""An empty observation block where the environment prints something."""
ACTION_COPY_REWARD = 1.0
"""The action repeated back instead of its result."""
META_REWARD = 0.0
"""Text that talks to the reader or the judge (praise of the answer, asking for a score)."""
HACK_REWARDS = {"empty": EMPTY_REWARD, "action copy": ACTION_COPY_REWARD, "meta text": META_REWARD}


def reward_hack(sample: BenchSample, observation: str) -> str | None:
    """Which no-attempt answer ``observation`` is (a key of :data:`HACK_REWARDS`), or None."""
    why = degenerate_answer(sample, observation)
    if why == "meta only" or praise_hits(observation, sample.ground_truth):
        return "meta text"
    return why


def rubric_reward(judgement: Judgement | None) -> float:
    """The judge's 1-5 mean mapped linearly onto [5, 25]; 0 for a failed judgement."""
    if judgement is None or not judgement.ok or judgement.total is None:
        return 0.0
    share = (judgement.total - SCORE_MIN) / (SCORE_MAX - SCORE_MIN)
    return RUBRIC_MIN + share * (RUBRIC_MAX - RUBRIC_MIN)


def hybrid_reward(rubric: float, rule: float, *, rubric_weight: float = 0.9, rule_weight: float = 0.1) -> float:
    return rubric_weight * rubric + rule_weight * rule


def prediction_of(raw: str) -> Prediction:
    """A completion as the judge sees it: the extracted observation, reasoning removed.

    RL is stricter than evaluation: only a closed observation block earns a reward, so
    the policy learns the output contract (and never gets credit for untagged text in
    which its reasoning might leak to the judge).
    """
    parsed = parse_prediction(raw)
    tagged = parsed.status is Status.complete
    return Prediction(text="", observation=parsed.observation if tagged else None, status=parsed.status if tagged else Status.missing)


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or a conversational list of messages."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant")


@dataclass
class RewardParts:
    rubric: float
    rule: float
    total: float
    hack: str | None = None
    """Set when the answer was no attempt (see :func:`reward_hack`); total is then fixed."""


class HybridReward:
    """TRL reward function: ``reward(prompts, completions, bench_sample, verifiers, **kw)``."""

    def __init__(self, scorer: Scorer, *, rubric_weight: float = 0.9, rule_weight: float = 0.1):
        self.scorer = scorer
        self.rubric_weight = rubric_weight
        self.rule_weight = rule_weight
        # TRL logs each reward function under its __name__.
        self.__name__ = "hybrid_reward"
        # One loop for the whole run: an LLM judge's async HTTP client is bound to the
        # loop it first ran on, so a fresh loop per batch would break it.
        self._loop: asyncio.AbstractEventLoop | None = None

    async def score_one(self, raw: str, sample: BenchSample, specs: list[VerifierSpec]) -> RewardParts:
        pred = prediction_of(raw)
        if pred.ok and pred.observation is not None and (hack := reward_hack(sample, pred.observation)):
            return RewardParts(0.0, 0.0, HACK_REWARDS[hack], hack=hack)
        judgement = await self.scorer.score(sample, pred) if pred.ok else None
        rubric = rubric_reward(judgement)
        # No verifier for this turn: the rule scorer's share stands in (rule_reward).
        rule = rule_reward(specs, raw, sample)
        total = hybrid_reward(rubric, rule, rubric_weight=self.rubric_weight, rule_weight=self.rule_weight)
        return RewardParts(rubric, rule, total)

    async def score_batch(self, raws: list[str], samples: list[str], verifiers: list[str]) -> list[RewardParts]:
        jobs = []
        for raw, sample_json, spec_json in zip(raws, samples, verifiers, strict=True):
            sample = BenchSample.model_validate_json(sample_json)
            specs = [VerifierSpec.model_validate(s) for s in json.loads(spec_json or "[]")]
            jobs.append(self.score_one(raw, sample, specs))
        return list(await asyncio.gather(*jobs))

    def __call__(
        self, prompts: list[Any], completions: list[Any], bench_sample: list[str], verifiers: list[str], **_: Any
    ) -> list[float]:
        raws = [completion_text(c) for c in completions]
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        parts = self._loop.run_until_complete(self.score_batch(raws, bench_sample, verifiers))
        return [p.total for p in parts]

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()


__all__ = ["ACTION_COPY_REWARD", "EMPTY_REWARD", "HACK_REWARDS", "META_REWARD", "RULE_REWARD_MAX", "HybridReward",
           "RewardParts", "completion_text", "hybrid_reward", "reward_hack", "rubric_reward"]
