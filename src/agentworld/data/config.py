"""One config per dataset builder, shared by Python, YAML and the CLI.

Every field carries its help text; loading, overrides, unknown-key errors and saving come
from :class:`agentworld.config.Config`, so a typo fails before hours of work, not after.
Each build saves its resolved config as ``config.json`` beside the dataset (see
:mod:`agentworld.data.resume`); ``<Builder>Config.from_yaml`` reads it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import field_validator, model_validator

from agentworld.config import Config, opt

C = TypeVar("C", bound=Config)


class CommonConfig(Config):
    """Fields every builder shares."""

    inputs: list[str] = opt([], "Trajectory JSONL files or directories of them (recorded, never test splits).")
    output_dir: str = opt("runs/data", "Directory for the dataset (Parquet and/or JSONL), the report and the resume log.")
    seed: int = opt(0, "Seed of every random decision (split, loss keep, turn choice, prompt variant).")
    test_fraction: float = opt(0.0, "Share of trajectories held out (by trajectory, leakage-checked); 0 = none.")
    domains: list[str] = opt([], "Only these domains (empty = all).")
    exclude_bench: list[str] = opt(
        [], "Benchmark directories: never train on the trajectories their samples evaluate, or near-duplicates of them."
    )
    near_duplicate: float = opt(0.9, "Jaccard of masked word n-grams at which two trajectories count as near-duplicates.")
    allow_leakage: bool = opt(False, "Build even when held-out trajectories have copies or near-duplicates in training.")
    min_turns: int = opt(2, "Drop trajectories with fewer turns (after removing empty and no-change turns).")
    workers: int = opt(0, "Worker processes for CPU-bound steps (0 = all cores).")
    output_format: str = opt("parquet", "How the dataset is written: parquet (shards), jsonl or both.")

    @field_validator("output_format")
    @classmethod
    def _format(cls, value: str) -> str:
        from agentworld.data.parquet import FORMATS

        if value not in FORMATS:
            raise ValueError(f"must be one of {', '.join(FORMATS)}")
        return value


class CPTConfig(CommonConfig):
    """Continued pre-training set: non-thinking trajectories with turn-level loss masking."""

    tokenizer: str = opt("smol", "Target model's tokenizer: checkpoint folder, .gguf file, or 'smol'.")
    max_length: int = opt(8192, "Tokens per packed row (SmolLM2's context); longer samples are cut (and counted).")
    packing: bool = opt(True, "Pack samples into rows of max_length; position_ids restart per sample.")
    loss_masking: bool = opt(True, "Apply turn-level loss masking (off: every observation is in the loss).")
    knowledge: list[str] = opt(
        [], "Domain knowledge as single-turn samples: JSONL files (text, optional title/domain) or search corpus folders."
    )
    knowledge_limit: int = opt(0, "At most this many knowledge passages (0 = all).")
    system_variant: int = opt(0, "System-prompt wording variant for CPT samples.")


class SFTConfig(CommonConfig):
    """SFT set by rejection sampling: k rollouts per query, judged, best kept above a threshold."""

    backend: str = opt("retrieval", "World-model backend spec producing rollouts, e.g. openai:MODEL@URL, hf:PATH, smol, "
                       "retrieval:TRAJECTORIES (grammar: agentworld.models.spec).")
    backend_options: dict[str, Any] = opt({}, "More backend options, KEY: VALUE (e.g. api_key, max_retries, precision).")
    k: int = opt(3, "Rollouts per query; 0 = none: every query is kept with the real observation as its target "
                 "(plain supervised targets, no backend or scorer is loaded).", ge=0)
    demos: int = opt(
        0, "Demonstrations in every query's prompt: the K nearest turns of the same domain from this build's own "
        "training trajectories (never the query's own trajectory), placed as the demos=K backend option places them "
        "at inference. Train with the K the model will be served with.", ge=0
    )
    temperature: float = opt(0.8, "Sampling temperature of the rollouts.")
    max_tokens: int = opt(2048, "Token limit of one rollout.")
    concurrency: int = opt(4, "Queries in flight at once.")
    scorer: str = opt("rules", "Scorer: 'rules' (offline rule scorer) or 'llm' (LLM judge).")
    judge_backend: str = opt("openai", "Backend spec of the LLM judge (scorer: llm), e.g. openai:MODEL@URL.")
    judge_options: dict[str, Any] = opt({}, "More options of the judge backend, KEY: VALUE.")
    threshold: float = opt(4.0, "Minimum judge total (1-5 mean) for a rollout to be kept.")
    min_determined: float = opt(
        1.0, "Share of the real observation's determined content (what the session already fixes: echoed commands, "
        "files read back, typed values) a rollout must reproduce exactly."
    )
    min_completeness: float = opt(
        0.95, "Share of the real observation's lines (mcp: JSON leaves) a rollout must reproduce (exactly or token F1 >= 0.8)."
    )
    min_precision: float = opt(0.95, "Share of the rollout's lines that the real observation has: invented output is wrong.")
    reasoning: Literal["keep", "drop", "require"] = opt(
        "keep", "Reasoning in targets: keep the rollout's <think> block when it has one, drop it, or require it "
        "(rollouts without one are rejected)."
    )
    target: Literal["truth", "rollout"] = opt(
        "truth", "Observation in the target: the real one (after the accepted rollout's reasoning) or the rollout's own."
    )
    turn_policy: str = opt("spread", "Which turns become queries: all, spread or random.")
    max_queries: int = opt(0, "Stop after this many queries (0 = all).")

    @field_validator("backend", "judge_backend")
    @classmethod
    def _spec(cls, value: str) -> str:
        from agentworld.models.spec import check_spec_text

        return check_spec_text(value)

    @model_validator(mode="after")
    def _spec_options(self) -> SFTConfig:
        from agentworld.models.spec import check_spec_options

        return check_spec_options(self, ("backend", "backend_options"), ("judge_backend", "judge_options"))


class RLConfig(CommonConfig):
    """RL prompt pool: exactly one turn per trajectory, ground truth and rule verifiers attached."""

    tokenizer: str = opt("smol", "Tokenizer used to measure prompt length: checkpoint folder, .gguf file, or 'smol'.")
    max_prompt_tokens: int = opt(4096, "Prompt length cap; a trajectory whose every candidate turn is longer is dropped.")
    prefer_verifiable: bool = opt(True, "Pick among turns that have a rule verifier when there are any.")
    system_variants: bool = opt(True, "Sample a system-prompt wording variant per sample.")


BUILDERS: dict[str, type[Config]] = {"cpt": CPTConfig, "sft": SFTConfig, "rl": RLConfig}


def field_help(cls: type[Config]) -> dict[str, str]:
    return cls.field_help()


def build_config(cls: type[C], data: dict[str, Any], source: str = "<config>") -> C:
    """``cls`` from a mapping; unknown keys and wrong types raise ConfigError naming ``source``."""
    return cls.from_mapping(data, source)


def load_config(cls: type[C], path: str | Path, overrides: dict[str, Any] | None = None) -> C:
    """Read a YAML config file into ``cls``; ``overrides`` (e.g. CLI flags) win."""
    return cls.from_yaml(path, overrides)


def config_dict(config: Config) -> dict[str, Any]:
    return config.to_dict()


__all__ = ["BUILDERS", "CPTConfig", "CommonConfig", "RLConfig", "SFTConfig", "build_config", "config_dict",
           "field_help", "load_config", "opt"]
