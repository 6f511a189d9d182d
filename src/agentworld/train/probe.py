"""A learnable reward for checking that GSPO learns at all, on any model in minutes.

The hybrid reward needs a model that already writes plausible observations; a tiny random
model never earns it, so a run on one cannot show whether the trainer learns. This reward
asks for the output contract's shape with a fixed body -- ``<predicted_observation>`` ``ok``
``</predicted_observation>`` -- and is shaped so that a random policy already earns a
little and every step towards the block earns more:

- half the share of the block's distinct tokens that the completion contains, plus
- half the share of the completion's tokens that are block tokens (both 0-1), plus
- 1 when the completion parses to a closed block whose observation is exactly the body.

``tests/test_train.py`` and ``benchmarks/gspo_learning.py`` train on it and check that
the mean reward of the last steps exceeds that of the first.
"""

from __future__ import annotations

from typing import Any

from agentworld.parsing import parse_prediction
from agentworld.prompts import format_observation
from agentworld.records.prediction import Status


class BlockReward:
    """GRPO reward function: how close each completion is to ``format_observation(body)``."""

    __name__ = "block_reward"  # TRL names a reward function's logged column after it

    def __init__(self, tokenizer: Any, body: str = "ok"):
        self.body = body
        ids = tokenizer(format_observation(body), add_special_tokens=False)["input_ids"]
        self.target = set(ids)

    def score(self, text: str, ids: list[int]) -> float:
        present = len(self.target & set(ids)) / len(self.target)
        density = sum(i in self.target for i in ids) / len(ids) if ids else 0.0
        parsed = parse_prediction(text)
        exact = parsed.status is Status.complete and parsed.observation == self.body
        return 0.5 * present + 0.5 * density + (1.0 if exact else 0.0)

    def __call__(self, prompts: list, completions: list, completion_ids: list[list[int]], **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [self.score(t, ids) for t, ids in zip(texts, completion_ids, strict=True)]
