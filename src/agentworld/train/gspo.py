"""GSPO with TRL's ``GRPOTrainer``: group-relative advantages, sequence-level ratios.

Prompts come from the RL pool (``agentworld data build rl``): one turn per trajectory,
its benchmark record (for the rubric judge) and its rule-verifier specs. GSPO is GRPO
with the importance ratio taken over the whole sequence
(``importance_sampling_level="sequence"``) and a tight clip range; the reward is the
hybrid 0.9 * rubric + 0.1 * rule of :mod:`agentworld.train.rewards`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentworld.judge.base import Scorer
from agentworld.train.common import TrainInputError, TrainInputs, TrainResult, load_inputs, make_trainer, run_trainer
from agentworld.train.rewards import HybridReward

if TYPE_CHECKING:
    from agentworld.train.config import GSPOFields as GSPOTrainConfig

COLUMNS = {"prompt", "bench_sample", "verifiers"}


def make_judge(config: GSPOTrainConfig) -> Scorer:
    """The rubric judge: the offline rule scorer or an LLM judge on a backend."""
    from agentworld.judge import make_scorer

    return make_scorer(config.judge, config.judge_backend, config.judge_options, what="judge")


def check_vllm(config: GSPOTrainConfig) -> None:
    """``use_vllm`` (TRL's vLLM rollouts, ``vllm_mode`` server or colocate) needs vLLM
    installed and a CUDA GPU: say so before the model is loaded."""
    if not getattr(config, "use_vllm", False):
        return
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise TrainInputError("use_vllm needs the vllm package, which is not installed",
                              "pip install vllm on a CUDA machine (see README 'Scaling out'), or set use_vllm: false")


def build_trainer(
    config: GSPOTrainConfig,
    *,
    judge: Scorer | None = None,
    callbacks: list[Any] | None = None,
    reward: Callable[[TrainInputs], Any] | None = None,
) -> tuple[Any, Any]:
    """TRL's ``GRPOTrainer`` set up for GSPO, and the tokenizer to save with it. The reward
    is the hybrid one unless ``reward`` makes another from the loaded inputs (e.g.
    :class:`agentworld.train.probe.BlockReward`, to check that training learns)."""
    from trl import GRPOTrainer

    check_vllm(config)
    inputs = load_inputs(config, "gspo", COLUMNS, padding_side="left")
    if reward is not None:
        func = reward(inputs)
    else:
        func = HybridReward(judge or make_judge(config), rubric_weight=config.rubric_weight, rule_weight=config.rule_weight)
    return make_trainer(GRPOTrainer, config, inputs, callbacks, reward_funcs=[func])


def train_gspo(
    config: GSPOTrainConfig, *, judge: Scorer | None = None, reward: Callable[[TrainInputs], Any] | None = None
) -> TrainResult:
    """Run GSPO to ``config.output_dir``, resuming from its newest checkpoint."""
    trainer, tokenizer = build_trainer(config, judge=judge, reward=reward)
    try:
        return run_trainer(trainer, config, tokenizer)
    finally:
        for reward in trainer.reward_funcs:
            if isinstance(reward, HybridReward):
                reward.close()
