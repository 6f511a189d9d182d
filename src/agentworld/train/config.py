"""One config dataclass per trainer, loadable from YAML and overridable from the CLI.

The fields are the knobs this project sets; they map onto TRL/transformers arguments in
each trainer module. Loading reuses the dataset builders' YAML loader, so unknown keys
and wrong types fail with the file name before any model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentworld.data.config import (
    build_config,
    config_dict,
    field_help,
    load_config,
    opt,
)

CONFIG_NAME = "agentworld_train.yaml"
"""File name of the trainer config saved next to every checkpoint."""


@dataclass
class CommonTrainConfig:
    """Fields every trainer shares."""

    data: str = opt("", "Dataset folder written by `agentworld data build` (holds train.parquet).")
    model: str = opt("smol", "Model to train: a Hugging Face checkpoint folder, or 'smol' (embedded SmolLM2-135M).")
    output_dir: str = opt("runs/train", "Folder for checkpoints, logs and the final model; a rerun resumes from it.")
    seed: int = opt(0, "Seed of the initialisation of new weights (LoRA) and of data order.")
    max_steps: int = opt(-1, "Stop after this many optimizer steps (-1: train num_train_epochs epochs).")
    num_train_epochs: float = opt(1.0, "Epochs over the dataset when max_steps is -1.")
    learning_rate: float = opt(2e-5, "Peak learning rate (AdamW).")
    lr_scheduler_type: str = opt("cosine", "Learning-rate schedule (transformers name: cosine, linear, constant...).")
    warmup_ratio: float = opt(0.03, "Share of the steps spent warming the learning rate up.")
    weight_decay: float = opt(0.0, "AdamW weight decay.")
    max_grad_norm: float = opt(1.0, "Gradient clipping norm.")
    per_device_train_batch_size: int = opt(1, "Rows per step on one device before accumulation.")
    gradient_accumulation_steps: int = opt(1, "Steps accumulated before one optimizer update.")
    bf16: bool = opt(False, "Train under bfloat16 autocast (also on CPU).")
    gradient_checkpointing: bool = opt(False, "Recompute activations in the backward pass to save memory.")
    lora: bool = opt(False, "Train a LoRA adapter instead of every weight.")
    lora_r: int = opt(16, "LoRA rank.")
    lora_alpha: int = opt(32, "LoRA scaling numerator (scale = alpha / r).")
    lora_dropout: float = opt(0.05, "Dropout on the LoRA input.")
    lora_target_modules: list[str] = opt(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "Modules given a LoRA adapter."
    )
    logging_steps: int = opt(10, "Log loss and learning rate every this many steps.")
    save_steps: int = opt(200, "Write a checkpoint every this many steps.")
    save_total_limit: int = opt(2, "Keep at most this many checkpoints (the oldest are deleted).")
    report_to: str = opt("none", "Where transformers sends logs: none, tensorboard, wandb...")


@dataclass
class CPTTrainConfig(CommonTrainConfig):
    """Continued pre-training: next-token loss on packed rows, honouring the per-token loss mask."""

    learning_rate: float = opt(5e-5, "Peak learning rate (AdamW).")


@dataclass
class SFTTrainConfig(CommonTrainConfig):
    """Supervised fine-tuning on prompt/completion chats, loss on the completion only."""

    max_length: int = opt(8192, "Longest prompt + completion in tokens; longer ones are truncated.")
    completion_only_loss: bool = opt(True, "Put only the completion (reasoning and observation) in the loss.")


@dataclass
class GSPOTrainConfig(CommonTrainConfig):
    """GSPO: GRPO with sequence-level importance ratios, rewarded by 0.9 * rubric + 0.1 * rule."""

    learning_rate: float = opt(1e-6, "Peak learning rate (AdamW).")
    num_generations: int = opt(8, "Completions sampled per prompt (the group the advantage is relative to).")
    per_device_train_batch_size: int = opt(8, "Completions per step on one device; a multiple of num_generations.")
    max_completion_length: int = opt(1024, "Token limit of one sampled completion (a cut answer earns 0).")
    temperature: float = opt(1.0, "Sampling temperature of the rollouts.")
    generation_kwargs: dict[str, Any] = opt(
        {}, "Extra transformers generation settings for the rollouts (top_p, repetition_penalty, sequence_bias...)."
    )
    loss_type: str = opt("grpo", "TRL loss normalisation; 'grpo' averages each sequence, then the group (as in GSPO).")
    epsilon: float = opt(3e-4, "Lower clip range of the sequence-level ratio.")
    epsilon_high: float = opt(4e-4, "Upper clip range of the sequence-level ratio.")
    beta: float = opt(0.0, "KL penalty to the reference model (0: no reference model kept).")
    steps_per_generation: int = opt(4, "Optimizer steps per batch of generations (off-policy minibatches).")
    judge: str = opt("rules", "Rubric judge: 'rules' (offline rule scorer) or 'llm' (LLM judge).")
    judge_backend: str = opt("openai", "Backend of the LLM judge (judge: llm).")
    judge_options: dict[str, Any] = opt({}, "Options of the judge backend (model, base_url...).")
    rubric_weight: float = opt(0.9, "Weight of the rubric reward.")
    rule_weight: float = opt(0.1, "Weight of the rule-verifier reward.")


TRAINERS: dict[str, type] = {"cpt": CPTTrainConfig, "sft": SFTTrainConfig, "gspo": GSPOTrainConfig}


def load_train_config(kind: str, path: str | Path | None, overrides: dict[str, Any] | None = None) -> Any:
    """The ``kind`` trainer's config from a YAML file (or defaults), ``overrides`` winning."""
    cls = TRAINERS[kind]
    if path is not None:
        return load_config(cls, path, overrides)
    return build_config(cls, {k: v for k, v in (overrides or {}).items() if v is not None}, "command line")


def save_train_config(config: Any, folder: str | Path) -> Path:
    """Write ``config`` as YAML into ``folder`` (next to a checkpoint) and return the file."""
    path = Path(folder) / CONFIG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"trainer": type(config).__name__, **config_dict(config)}
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def read_train_config(folder: str | Path) -> Any:
    """The config saved by :func:`save_train_config` in ``folder``."""
    data = yaml.safe_load((Path(folder) / CONFIG_NAME).read_text(encoding="utf-8"))
    name = data.pop("trainer")
    cls = next(c for c in TRAINERS.values() if c.__name__ == name)
    return build_config(cls, data, str(Path(folder) / CONFIG_NAME))


__all__ = [
    "CONFIG_NAME",
    "TRAINERS",
    "CPTTrainConfig",
    "GSPOTrainConfig",
    "SFTTrainConfig",
    "field_help",
    "load_train_config",
    "read_train_config",
    "save_train_config",
]
