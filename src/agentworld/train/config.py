"""One config per trainer: this project's fields plus every field of the trainer's own
argument class, loadable from YAML and overridable from the CLI.

The trainer fields are not copied: each config class is generated (once, on first use)
from ``dataclasses.fields`` of ``transformers.TrainingArguments`` (CPT), ``trl.SFTConfig``
(SFT) or ``trl.GRPOConfig`` (GSPO), with their names, types, defaults and help text, so
every argument of the installed version is accepted and type-checked, and a misspelt one
fails with a suggestion before any model is loaded. Only the defaults this project
prefers are listed here, as values. Project fields (data, model, LoRA, the judge and the
hybrid reward weights) are declared with help text in :class:`TrainFields` and below.

Importing this module imports neither transformers nor TRL: the generated classes
(``CPTTrainConfig`` ...) are built when first asked for.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import Field, TypeAdapter, create_model, field_validator, model_validator
from pydantic.errors import PydanticSchemaGenerationError

from agentworld.config import Config, ConfigError, merge_overrides, opt, read_yaml

CONFIG_NAME = "agentworld_train.yaml"
"""File name of the trainer config saved next to every checkpoint."""

RENAMED = {"warmup_ratio": "warmup_steps", "torch_dtype": "dtype"}
"""Keys older transformers had, read as their replacement (transformers 5 takes a warmup
share below 1 in ``warmup_steps``, and names ``from_pretrained``'s ``torch_dtype`` ``dtype``)."""

DTYPES = ("auto", "bf16", "fp16", "fp32")
"""What ``dtype`` may say: the dtype the trainers load the weights in."""

ATTENTION = ("auto", "sdpa", "eager", "flash_attention_2")
"""What ``attn_implementation`` may say (``auto``: transformers' own choice, sdpa where the model has it)."""


class TrainFields(Config):
    """This project's fields every trainer shares (the rest come from the argument class)."""

    data: str = opt("", "Dataset folder written by `agentworld data build` (holds train.parquet).")
    model: str = opt("smol", "Model to train: a Hugging Face checkpoint folder, or 'smol' (embedded SmolLM2-135M).")
    lora: bool = opt(False, "Train a LoRA adapter instead of every weight.")
    lora_r: int = opt(16, "LoRA rank.")
    lora_alpha: int = opt(32, "LoRA scaling numerator (scale = alpha / r).")
    lora_dropout: float = opt(0.05, "Dropout on the LoRA input.")
    precision: str = opt(
        "auto", "auto (bf16 where this machine runs it faster: a CUDA GPU with bf16, or a CPU measured at start), bf16 or fp32."
    )
    dtype: str = opt(
        "auto", "Dtype the weights are loaded in: auto (bf16 where `precision` resolves to bf16, else fp32), bf16, fp16 "
        "(LoRA only) or fp32. `torch_dtype` is read as this."
    )
    attn_implementation: str = opt(
        "auto", "Attention kernel: auto (transformers' choice), sdpa, eager or flash_attention_2 (needs flash-attn and a CUDA GPU)."
    )
    kind: ClassVar[str] = ""
    lora_target_modules: list[str] = opt(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "Modules given a LoRA adapter."
    )

    renamed: ClassVar[dict[str, str]] = RENAMED

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        # Keyword construction in Python (CPTTrainConfig(warmup_ratio=0.0)) takes old names too.
        return cls.rename_keys(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _precision(self) -> TrainFields:
        from agentworld.train.precision import PRECISIONS

        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        bf16 = getattr(self, "bf16", False)
        if bf16 and self.precision == "fp32":
            raise ValueError("bf16: true contradicts precision: fp32 (set precision only)")
        if bf16 and self.precision == "auto":
            self.precision = "bf16"  # an older config asking for bf16 outright
        return self

    @model_validator(mode="after")
    def _weights(self) -> TrainFields:
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {self.dtype!r}")
        if self.attn_implementation not in ATTENTION:
            raise ValueError(f"attn_implementation must be one of {', '.join(ATTENTION)}, not {self.attn_implementation!r}")
        if self.dtype == "fp16" and not self.lora:
            # Updating fp16 weights directly loses small updates and overflows, and fp16
            # mixed precision refuses to unscale fp16 gradients: say so before loading.
            raise ValueError("dtype: fp16 trains LoRA adapters only (lora: true); use bf16 or fp32 to train every weight")
        return self

    def trainer_kwargs(self) -> dict[str, Any]:
        """The argument-class fields whose value differs from that class's default."""
        spec = _SPECS[self.kind]
        defaults = _arg_defaults(spec.args)
        values = {name: getattr(self, name) for name in defaults}
        return {k: v for k, v in values.items() if k not in defaults or v != defaults[k]}

    def trainer_args(self, **runtime: Any) -> Any:
        """The trainer's own argument object (``TrainingArguments``, ``SFTConfig`` ...);
        ``runtime`` fills fields the config leaves at their default (e.g. ``use_cpu``)."""
        kwargs = self.trainer_kwargs()
        for key, value in runtime.items():
            kwargs.setdefault(key, value)
        return _import(_SPECS[self.kind].args)(**kwargs)


class CPTFields(TrainFields):
    """Continued pre-training: next-token loss on packed rows, honouring the per-token loss mask."""

    kind: ClassVar[str] = "cpt"


class SFTFields(TrainFields):
    """Supervised fine-tuning on prompt/completion chats, loss on the completion only."""

    kind: ClassVar[str] = "sft"


class GSPOFields(TrainFields):
    """GSPO: GRPO with sequence-level importance ratios, rewarded by 0.9 * rubric + 0.1 * rule."""

    kind: ClassVar[str] = "gspo"

    judge: str = opt("rules", "Rubric judge: 'rules' (offline rule scorer) or 'llm' (LLM judge).")
    judge_backend: str = opt("openai", "Backend spec of the LLM judge (judge: llm), e.g. openai:MODEL@URL.")
    judge_options: dict[str, Any] = opt({}, "More options of the judge backend, KEY: VALUE (api_key, max_retries...).")
    rubric_weight: float = opt(0.9, "Weight of the rubric reward.")
    rule_weight: float = opt(0.1, "Weight of the rule-verifier reward.")

    @field_validator("judge_backend")
    @classmethod
    def _spec(cls, value: str) -> str:
        from agentworld.models.spec import check_spec_text

        return check_spec_text(value)

    @model_validator(mode="after")
    def _spec_options(self) -> GSPOFields:
        from agentworld.models.spec import check_spec_options

        return check_spec_options(self, ("judge_backend", "judge_options"))


# The argument-class defaults this project changes (values only: the fields, their types
# and help text come from the class). Shared first, then per trainer.
SHARED_DEFAULTS: dict[str, Any] = {
    "output_dir": "runs/train",
    "seed": 0,
    "max_steps": -1,
    "num_train_epochs": 1.0,
    "learning_rate": 2e-5,
    "lr_scheduler_type": "cosine",
    "warmup_steps": 0.03,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 1,
    "bf16": False,
    "gradient_checkpointing": False,
    "logging_steps": 10,
    "save_steps": 200,
    "save_total_limit": 2,
    "report_to": "none",
}


@dataclass(frozen=True)
class TrainerSpec:
    """A trainer's config: its project fields, its argument class and the defaults it changes."""

    name: str
    fields: type[TrainFields]
    args: str  # "module:Class" of the argument dataclass, imported on first use
    defaults: dict[str, Any]


_SPECS: dict[str, TrainerSpec] = {
    "cpt": TrainerSpec(
        "CPTTrainConfig", CPTFields, "transformers:TrainingArguments",
        # The collator reads position_ids and labels, which the model's forward does not name.
        {"learning_rate": 5e-5, "remove_unused_columns": False},
    ),
    "sft": TrainerSpec("SFTTrainConfig", SFTFields, "trl:SFTConfig", {"max_length": 8192, "completion_only_loss": True}),
    "gspo": TrainerSpec(
        "GSPOTrainConfig", GSPOFields, "trl:GRPOConfig",
        {
            "learning_rate": 1e-6,
            "importance_sampling_level": "sequence",  # what makes GRPO GSPO
            "loss_type": "grpo",
            "num_generations": 8,
            "per_device_train_batch_size": 8,
            "max_completion_length": 1024,
            "temperature": 1.0,
            "epsilon": 3e-4,
            "epsilon_high": 4e-4,
            "beta": 0.0,
            "steps_per_generation": 4,
        },
    ),
}

TRAINERS = tuple(_SPECS)
"""The trainer kinds: cpt, sft, gspo."""


def register_trainer(kind: str, spec: TrainerSpec) -> None:
    """Add a trainer defined in another package (the agent trainer, ``agentworld.agents.train``),
    so its config is generated, saved beside checkpoints and read back like these."""
    if _SPECS.get(kind, spec) != spec:
        raise ValueError(f"trainer {kind!r} is already registered")
    _SPECS[kind] = spec


def _import(target: str) -> type:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@functools.cache
def _arg_defaults(target: str) -> dict[str, Any]:
    """Every init field of the argument class with its default."""
    out = {}
    for f in dataclasses.fields(_import(target)):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = None
    return out


def _field_type(annotation: Any) -> Any:
    """The dataclass field's type when pydantic can check it, else Any (the argument
    class checks it when the trainer is built)."""
    if isinstance(annotation, str):
        return Any
    try:
        TypeAdapter(annotation)
    except (PydanticSchemaGenerationError, TypeError, NameError):
        return Any
    return annotation


@functools.cache
def config_class(kind: str) -> type[TrainFields]:
    """The ``kind`` trainer's config class, generated from its argument class's fields."""
    if kind not in _SPECS:
        raise ConfigError(f"unknown trainer {kind!r}: expected one of {', '.join(_SPECS)}")
    spec = _SPECS[kind]
    defaults = {**SHARED_DEFAULTS, **spec.defaults}
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(_import(spec.args)):
        if not f.init or f.name.startswith("_") or f.name in spec.fields.model_fields:
            continue
        help_text = " ".join(str(f.metadata.get("help", "")).split())
        if f.name in defaults:
            default = opt(defaults[f.name], help_text)
        elif f.default is not dataclasses.MISSING:
            default = opt(f.default, help_text)
        elif f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory, description=help_text)
        else:
            default = opt(None, help_text)
        fields[f.name] = (_field_type(f.type), default)
    missing = set(defaults) - set(fields)
    if missing:  # a default for a field the installed version lacks: say so, not silently drop it
        raise ConfigError(f"{spec.args} has no field(s) {', '.join(sorted(missing))}; update agentworld.train.config")
    return create_model(spec.name, __base__=spec.fields, __module__=__name__, __doc__=spec.fields.__doc__, **fields)


def __getattr__(name: str) -> Any:
    # CPTTrainConfig, SFTTrainConfig, GSPOTrainConfig: built on first use, so importing this
    # module (the CLI does, for --help) stays free of transformers and TRL.
    for kind, spec in _SPECS.items():
        if spec.name == name:
            return config_class(kind)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def field_help(kind: str) -> dict[str, str]:
    return config_class(kind).field_help()


def load_train_config(kind: str, path: str | Path | None, overrides: dict[str, Any] | None = None) -> Any:
    """The ``kind`` trainer's config from a YAML file (or defaults), ``overrides`` winning."""
    cls = config_class(kind)
    if path is not None:
        return cls.from_yaml(path, overrides)
    return cls.from_overrides(overrides)


def _to_saved(config: TrainFields) -> dict[str, Any]:
    """Project fields, then the trainer fields this project sets or the config changes:
    the resolved settings, without a hundred lines of the argument class's defaults."""
    values = config.to_dict()
    spec = _SPECS[config.kind]
    keep = set(spec.fields.model_fields) | set(SHARED_DEFAULTS) | set(spec.defaults) | set(config.trainer_kwargs())
    return {k: v for k, v in values.items() if k in keep}


def save_train_config(config: TrainFields, folder: str | Path) -> Path:
    """Write ``config`` as YAML into ``folder`` (next to a checkpoint) and return the file."""
    path = Path(folder) / CONFIG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"trainer": config.kind, **_to_saved(config)}
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def read_train_config(folder: str | Path) -> Any:
    """The config saved by :func:`save_train_config` in ``folder``."""
    path = Path(folder) / CONFIG_NAME
    data, lines = read_yaml(path)
    kind = data.pop("trainer", None)
    # Older files name the class (CPTTrainConfig) instead of the kind (cpt).
    kind = next((k for k, s in _SPECS.items() if kind in (k, s.name)), None)
    if kind is None:
        raise ConfigError(f"{path}: 'trainer' must be one of {', '.join(_SPECS)}")
    merged, _ = merge_overrides(data, {})
    return config_class(kind).from_mapping(merged, str(path), lines=lines)


__all__ = [
    "CONFIG_NAME",
    "TRAINERS",
    "CPTTrainConfig",  # noqa: F822 - generated on first use (module __getattr__)
    "GSPOTrainConfig",  # noqa: F822
    "SFTTrainConfig",  # noqa: F822
    "TrainFields",
    "config_class",
    "field_help",
    "load_train_config",
    "read_train_config",
    "save_train_config",
]
