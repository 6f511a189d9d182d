"""The config base: shipped YAML files load, mistakes name file, key and line, overrides
coerce, saved configs read back, and trainer configs take every field of the trainer's
own argument class without a copy of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.config import ConfigError, parse_overrides
from agentworld.data.config import BUILDERS, CPTConfig, SFTConfig
from agentworld.data.resume import ResumeLog
from agentworld.models import parse_backend_spec
from agentworld.train.config import (
    CONFIG_NAME,
    config_class,
    load_train_config,
    read_train_config,
    save_train_config,
)

ROOT = Path(__file__).parents[1]


def _kind(path: Path) -> str:
    return path.stem.split("_")[0]


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "data").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_data_config_loads(path: Path) -> None:
    cls = BUILDERS[_kind(path)]
    cfg = cls.from_yaml(path)
    assert cfg.inputs and cfg.output_dir.startswith("runs/")
    assert all(cls.field_help().values())


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "train").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_train_config_loads(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    cfg = load_train_config(_kind(path), path)
    assert cfg.data == raw["data"] and cfg.learning_rate == raw["learning_rate"]
    # the old key name still works: transformers 5 reads a share below 1 in warmup_steps
    assert cfg.warmup_steps == raw["warmup_ratio"]
    assert all(cfg.field_help()[k] for k in raw if k != "warmup_ratio")  # help text on every key used


def test_unknown_keys_and_bad_values_name_file_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: x\nmodel: smol\nlearning_rat: 0.1\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:3: unknown key 'learning_rat' \(did you mean 'learning_rate'\?\)"):
        load_train_config("sft", bad)
    bad.write_text("inputs:\n  - a.jsonl\n  - {path: b.jsonl}\nmax_length: lots\n")
    with pytest.raises(ConfigError) as err:
        CPTConfig.from_yaml(bad)
    lines = str(err.value).splitlines()  # every problem, each with its line and key path
    assert lines == [
        f"{bad}:3: inputs.1 must be str, got {{'path': 'b.jsonl'}}",
        f"{bad}:4: max_length must be int, got 'lots'",
    ]
    bad.write_text("optim: [not, an, optimizer]\n")  # a transformers field's own type is checked
    with pytest.raises(ConfigError, match=r"bad\.yaml:1: optim"):
        load_train_config("cpt", bad)
    bad.write_text("warmup_ratio: 0.1\nwarmup_steps: 3\n")
    with pytest.raises(ConfigError, match="old name of warmup_steps"):
        load_train_config("cpt", bad)
    bad.write_text("data: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:2: not valid YAML"):
        load_train_config("cpt", bad)


def test_trainer_fields_nobody_copied_reach_the_argument_object() -> None:
    cfg = load_train_config("cpt", ROOT / "configs/train/cpt.yaml",
                            parse_overrides(["optim=adafactor", "adam_beta2=0.95", "gradient_checkpointing=true"]))
    args = cfg.trainer_args(use_cpu=True)
    assert type(args).__name__ == "TrainingArguments"
    assert args.optim == "adafactor" and args.adam_beta2 == 0.95 and args.gradient_checkpointing
    assert args.warmup_steps == 0.03 and args.gradient_accumulation_steps == 8 and not args.remove_unused_columns
    assert cfg.field_help()["adam_beta2"].startswith("The exponential decay rate")  # transformers' own help

    gspo = load_train_config("gspo", ROOT / "configs/train/gspo.yaml", {"top_p": 0.9, "mask_truncated_completions": True})
    args = gspo.trainer_args(use_cpu=True)
    assert type(args).__name__ == "GRPOConfig"
    assert args.importance_sampling_level == "sequence"  # GSPO's default, not GRPO's
    assert args.top_p == 0.9 and args.mask_truncated_completions and args.epsilon_high == 4e-4
    token = load_train_config("gspo", None, {"importance_sampling_level": "token"})
    assert token.trainer_args(use_cpu=True).importance_sampling_level == "token"

    sft = load_train_config("sft", None, parse_overrides(["packing=true", "max_length=512"]))
    args = sft.trainer_args(use_cpu=True)
    assert type(args).__name__ == "SFTConfig" and args.packing and args.max_length == 512 and args.completion_only_loss
    assert len(config_class("gspo").model_fields) > 150  # every GRPOConfig field, none written out here


def test_overrides_coerce_and_merge_into_sections() -> None:
    assert parse_overrides(["a.b=1", "c=[x, 2]", "d=true", "e=1.0e-5", "f="]) == {
        "a": {"b": 1}, "c": ["x", 2], "d": True, "e": 1e-5, "f": ""
    }
    # YAML reads 1e-5 as text; the field's type makes it a number
    assert load_train_config("sft", None, parse_overrides(["learning_rate=1e-5"])).learning_rate == 1e-5
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["learning_rate"])
    cfg = SFTConfig.from_yaml(ROOT / "configs/data/sft.yaml",
                              parse_overrides(["backend_options.model=tiny", "k=5", "threshold=4", "inputs=[a, 7]"]))
    assert cfg.backend_options == {"timeout": 300, "model": "tiny"}  # merged, not replaced
    assert parse_backend_spec(cfg.backend, cfg.backend_options).target == "tiny"  # the later layer wins
    assert cfg.k == 5 and cfg.threshold == 4.0 and cfg.inputs == ["a", "7"]
    with pytest.raises(ConfigError, match=r"^command line: k must be int, got 'five'$"):
        SFTConfig.from_yaml(ROOT / "configs/data/sft.yaml", parse_overrides(["k=five"]))
    gspo = load_train_config("gspo", ROOT / "configs/train/gspo.yaml", parse_overrides(["generation_kwargs.top_k=5"]))
    assert gspo.generation_kwargs == {"top_k": 5}


def test_backend_specs_in_configs_are_checked_at_their_line(tmp_path: Path) -> None:
    bad = tmp_path / "sft.yaml"
    bad.write_text("k: 3\nbackend: openai:m@http://h/v1,retries=2\n")
    with pytest.raises(ConfigError, match=r"sft\.yaml:2: backend: .*no option 'retries'.*max_retries"):
        SFTConfig.from_yaml(bad)
    bad.write_text("backend: hf:ckpt\nbackend_options:\n  max_batch: lots\n")
    with pytest.raises(ConfigError, match=r"max_batch='lots' of the hf backend must be an integer"):
        SFTConfig.from_yaml(bad)
    with pytest.raises(ConfigError, match=r"unknown backend 'vllm'.*openai, hf, smol, llamacpp, retrieval"):
        load_train_config("gspo", None, {"judge_backend": "vllm:m"})


def test_saved_configs_read_back(tmp_path: Path) -> None:
    cfg = load_train_config("gspo", ROOT / "configs/train/gspo.yaml",
                            {"warmup_steps": 0.0, "judge_options": {"model": "m"}, "adam_beta2": 0.9})
    path = save_train_config(cfg, tmp_path)
    assert path.name == CONFIG_NAME and read_train_config(tmp_path) == cfg
    text = path.read_text()
    assert "adam_beta2: 0.9" in text and "adam_beta1" not in text  # untouched argument defaults stay out
    data = CPTConfig(inputs=["x.jsonl"], output_dir=str(tmp_path / "d"), max_length=64, knowledge=["k"])
    with ResumeLog(tmp_path / "d", "cpt", data):
        pass
    assert CPTConfig.from_yaml(tmp_path / "d" / "config.json") == data  # what a build saves beside its dataset
    assert CPTConfig.from_yaml(data.save(tmp_path / "c.yaml")) == data


def test_cli_overrides_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["data", "build", "cpt", "-c", str(ROOT / "configs/data/cpt.yaml"), "--set", "max_lenght=5"])
    assert res.exit_code == 2
    assert "command line: unknown key 'max_lenght' (did you mean 'max_length'?)" in res.output
    res = runner.invoke(app, ["train", "sft", "-c", str(ROOT / "configs/train/sft.yaml"), "lerning_rate=1"])
    assert res.exit_code == 2 and "did you mean 'learning_rate'" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["train", "gspo", "--set", "num_generations=many"])
    assert res.exit_code == 2 and "num_generations must be int" in res.output


def test_config_modules_import_without_transformers() -> None:
    code = (
        "import sys, agentworld.config, agentworld.data.config, agentworld.train, agentworld.train.config\n"
        "print(sorted(m for m in ('torch', 'transformers', 'trl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
