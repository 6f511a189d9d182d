"""A learnable reward for checking that GSPO learns at all, on any model in minutes.

The hybrid reward needs a model that already writes plausible observations; a tiny random
model never earns it, so a run on one cannot show whether the trainer learns. This reward
asks for the output contract's shape with a fixed body -- ``<predicted_observation>`` ``ok``
``</predicted_observation>`` -- and is shaped so that a random policy already earns a
little and every step towards the block earns more:

- half the share of the block's distinct tokens that the completion contains, plus
- half the share of the completion's tokens that are block tokens (both 0-1), plus
- 1 when the completion parses to a closed block whose observation is exactly the body.

:func:`learning_run` trains a tiny random model on it; ``tests/test_train.py`` checks that
the mean reward of the last steps exceeds that of the first, and
``benchmarks/gspo_learning.py`` prints the curve.
"""

from __future__ import annotations

import json
from pathlib import Path
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


def learning_run(root: Path, prompts: list[str], *, steps: int, lr: float = 3e-2, length: int = 32, seed: int = 0,
                 precision: str = "fp32") -> list[float]:
    """GSPO on the tiny random model of :mod:`agentworld.models.tiny` with :class:`BlockReward`,
    ``steps`` steps of 8 completions of up to ``length`` tokens, the prompts of the RL pool
    built from the trajectory files ``prompts``; returns the mean reward of every step.

    ``precision`` is pinned (fp32 by default) rather than ``auto``: the curve must not depend on
    whether the CPU has native bf16. With fp32, 20 steps at ``lr`` 3e-2 took the mean reward
    from under 0.1 to about 0.55 on each of seeds 0-3 (2e-2 for 12 steps did not learn on fp32;
    5e-2 collapsed to empty answers on seed 3): ``benchmarks/gspo_learning.py --seed N``."""
    from agentworld.data.config import RLConfig
    from agentworld.data.rl import build_rl
    from agentworld.models.tiny import build_tiny_checkpoint
    from agentworld.train.config import GSPOTrainConfig
    from agentworld.train.gspo import train_gspo

    tiny = build_tiny_checkpoint(root / "tiny")
    build_rl(RLConfig(inputs=prompts, output_dir=str(root / "rl"), tokenizer=str(tiny), max_prompt_tokens=100_000))
    config = GSPOTrainConfig(
        data=str(root / "rl"), model=str(tiny), output_dir=str(root / "out"), seed=seed, max_steps=steps,
        save_steps=steps, learning_rate=lr, lr_scheduler_type="constant", warmup_ratio=0.0, logging_steps=1,
        num_generations=8, per_device_train_batch_size=8, steps_per_generation=1, max_completion_length=length,
        temperature=1.0, epsilon=0.2, epsilon_high=0.28, precision=precision,
    )
    train_gspo(config, reward=lambda inputs: BlockReward(inputs.tokenizer))
    state = json.loads((root / "out" / f"checkpoint-{steps}" / "trainer_state.json").read_text())
    return [h["reward"] for h in state["log_history"] if "reward" in h]
