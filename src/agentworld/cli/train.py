"""``agentworld train``: CPT, SFT and GSPO."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail, out

app = typer.Typer(help="Train world models: CPT, SFT and GSPO.", no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="YAML trainer config (see configs/train/).")]
DataOpt = Annotated[str | None, typer.Option("--data", "-d", help="Dataset folder from `agentworld data build`.")]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Checkpoint folder to start from, or 'smol'.")]
OutOpt = Annotated[str | None, typer.Option("--out", "-o", help="Output folder; a rerun resumes from its last checkpoint.")]
StepsOpt = Annotated[int | None, typer.Option("--max-steps", help="Stop after this many optimizer steps.")]
LoraOpt = Annotated[bool | None, typer.Option("--lora/--no-lora", help="Train a LoRA adapter instead of all weights.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="KEY=VALUE override of any config key, e.g. warmup_steps=0.1 (repeatable)."),
]
PairsArg = Annotated[
    list[str] | None,
    typer.Argument(help="More KEY=VALUE overrides: any project or trainer argument (e.g. optim=adafactor).", metavar="KEY=VALUE", show_default=False),
]


def _run(kind: str, config_file: Path | None, flags: dict[str, Any], pairs: list[str]) -> None:
    from rich.markup import escape

    from agentworld.config import ConfigError, parse_overrides
    from agentworld.train.common import TrainInputError
    from agentworld.train.config import TrainFields, load_train_config

    if config_file is not None and not config_file.exists():
        raise fail(f"no such config file: {config_file}", f"start from configs/train/{kind}.yaml")
    try:
        overrides = {**parse_overrides(pairs), **{k: v for k, v in flags.items() if v is not None}}
        config = load_train_config(kind, config_file, overrides)
    except ConfigError as exc:
        keys = ", ".join(TrainFields.model_fields)
        raise fail(escape(str(exc)), f"keys: {keys}, and every field of the trainer's argument class "
                   f"(see configs/train/{kind}.yaml)") from None
    except ImportError as exc:
        raise fail(f"training needs {exc.name or 'an optional dependency'}", "pip install 'agentworld[train]'") from None
    try:
        train = _trainer(kind)
        console.print(f"[bold]{kind}[/]: {config.model} on {config.data} -> {config.output_dir}")
        result = train(config)
    except TrainInputError as exc:
        raise fail(str(exc), exc.hint) from None
    except ValueError as exc:
        # TRL and transformers check their arguments when the trainer is built.
        raise fail(str(exc), f"adjust the values in the {kind} config (see configs/train/{kind}.yaml)") from None
    except ImportError as exc:
        raise fail(f"training needs {exc.name or 'an optional dependency'}", "pip install 'agentworld[train]'") from None
    if result.resumed_from:
        console.print(f"resumed from {result.resumed_from}")
    loss = result.metrics.get("train_loss")
    out.print(f"{result.output_dir}: {result.global_step} steps" + (f", train loss {loss:.4g}" if loss is not None else ""))


def _trainer(kind: str):
    if kind == "cpt":
        from agentworld.train.cpt import train_cpt

        return train_cpt
    if kind == "sft":
        from agentworld.train.sft import train_sft

        return train_sft
    from agentworld.train.gspo import train_gspo

    return train_gspo


def _overrides(data: str | None, model: str | None, out_dir: str | None, steps: int | None, lora: bool | None) -> dict:
    return {"data": data, "model": model, "output_dir": out_dir, "max_steps": steps, "lora": lora}


@app.command()
def cpt(
    config: ConfigOpt = None, data: DataOpt = None, model: ModelOpt = None, out_dir: OutOpt = None,
    max_steps: StepsOpt = None, lora: LoraOpt = None, set_: SetOpt = None, pairs: PairsArg = None,
) -> None:
    """Continued pre-training on a CPT dataset (per-token loss mask, packed rows)."""
    _run("cpt", config, _overrides(data, model, out_dir, max_steps, lora), [*(set_ or []), *(pairs or [])])


@app.command()
def sft(
    config: ConfigOpt = None, data: DataOpt = None, model: ModelOpt = None, out_dir: OutOpt = None,
    max_steps: StepsOpt = None, lora: LoraOpt = None, set_: SetOpt = None, pairs: PairsArg = None,
) -> None:
    """Supervised fine-tuning on an SFT dataset (loss on the completion only)."""
    _run("sft", config, _overrides(data, model, out_dir, max_steps, lora), [*(set_ or []), *(pairs or [])])


@app.command()
def gspo(
    config: ConfigOpt = None, data: DataOpt = None, model: ModelOpt = None, out_dir: OutOpt = None,
    max_steps: StepsOpt = None, lora: LoraOpt = None, set_: SetOpt = None, pairs: PairsArg = None,
) -> None:
    """GSPO on an RL pool, rewarded by 0.9 * judge rubric + 0.1 * rule verifiers."""
    _run("gspo", config, _overrides(data, model, out_dir, max_steps, lora), [*(set_ or []), *(pairs or [])])
