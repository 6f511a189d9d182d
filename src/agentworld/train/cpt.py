"""Continued pre-training on the packed CPT rows, with their per-token loss mask.

Rows come from ``agentworld data build cpt``: ``input_ids``, ``labels`` (-100 where the
turn-level masking drops the loss) and ``position_ids`` restarting at every packed
sample. The batch is padding-free: the rows of a step are laid end to end in one
sequence with their position ids, no attention mask and no KV cache, so transformers
keeps every packed sample's attention inside that sample. The loss is the model's own
shifted cross-entropy, which skips every -100 label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.data.packing import IGNORE_INDEX
from agentworld.train.common import TrainResult, load_inputs, make_trainer, run_trainer

if TYPE_CHECKING:
    from agentworld.train.config import CPTFields as CPTTrainConfig

COLUMNS = {"input_ids", "labels", "position_ids"}


def collate_padding_free(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows concatenated into one sequence of batch size 1."""
    import torch

    ids = [t for r in rows for t in r["input_ids"]]
    labels = [t for r in rows for t in r["labels"]]
    pos = [p for r in rows for p in r["position_ids"]]
    # The first token of a sample is never a target: otherwise, after the shift, the
    # last token of the previous sample would be trained to predict it.
    labels = [IGNORE_INDEX if p == 0 else lab for lab, p in zip(labels, pos, strict=True)]
    return {
        "input_ids": torch.tensor([ids]),
        "labels": torch.tensor([labels]),
        "position_ids": torch.tensor([pos]),
    }


def build_trainer(config: CPTTrainConfig, *, callbacks: list[Any] | None = None) -> tuple[Any, Any]:
    """The transformers ``Trainer`` for ``config`` and the tokenizer to save with it."""
    from transformers import Trainer

    inputs = load_inputs(config, "cpt", COLUMNS)
    # Without a KV cache, position_ids that restart mark packed samples and transformers
    # builds a block-diagonal attention mask: packed samples never see each other.
    inputs.model.config.use_cache = False
    return make_trainer(Trainer, config, inputs, callbacks, data_collator=collate_padding_free)


def train_cpt(config: CPTTrainConfig) -> TrainResult:
    """Run CPT to ``config.output_dir``, resuming from its newest checkpoint."""
    trainer, tokenizer = build_trainer(config)
    return run_trainer(trainer, config, tokenizer)
