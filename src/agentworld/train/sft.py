"""Supervised fine-tuning with TRL's ``SFTTrainer`` on the rejection-sampled chats.

Rows come from ``agentworld data build sft``: a conversational ``prompt`` (system
prompt, history, the action) and a ``completion`` (reasoning in ``<think>``, then the
observation block). With ``completion_only_loss`` only the completion is learned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.train.common import TrainResult, load_inputs, make_trainer, run_trainer

if TYPE_CHECKING:
    from agentworld.train.config import SFTFields as SFTTrainConfig

COLUMNS = {"prompt", "completion"}


def build_trainer(config: SFTTrainConfig, *, callbacks: list[Any] | None = None) -> tuple[Any, Any]:
    """TRL's ``SFTTrainer`` for ``config`` and the tokenizer to save with it."""
    from trl import SFTTrainer

    return make_trainer(SFTTrainer, config, load_inputs(config, "sft", COLUMNS), callbacks)


def train_sft(config: SFTTrainConfig) -> TrainResult:
    """Run SFT to ``config.output_dir``, resuming from its newest checkpoint."""
    trainer, tokenizer = build_trainer(config)
    return run_trainer(trainer, config, tokenizer)
