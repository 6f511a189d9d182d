"""Real-size model options of the trainers: the weight dtype, the attention kernel,
gradient checkpointing and GSPO's vLLM fields, on the tiny checkpoint."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

from agentworld.config import ConfigError
from agentworld.data.config import CPTConfig
from agentworld.data.cpt import build_cpt
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.train.common import TrainInputError, load_model, run_trainer, start_chain, weights_choice
from agentworld.train.config import config_class, load_train_config, read_train_config, save_train_config
from agentworld.train.cpt import build_trainer

EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def test_config_round_trip_and_choices(tmp_path: Path) -> None:
    cfg = load_train_config("gspo", None, {"dtype": "bf16", "attn_implementation": "sdpa", "activation_checkpointing": True,
                                           "use_vllm": True, "vllm_mode": "server",
                                           "vllm_server_base_url": "http://127.0.0.1:8001"})
    back = read_train_config(save_train_config(cfg, tmp_path).parent)
    for key in ("dtype", "attn_implementation", "activation_checkpointing", "use_vllm", "vllm_mode", "vllm_server_base_url"):
        assert getattr(back, key) == getattr(cfg, key), key
    # The old transformers name is read as dtype, from YAML with the file's line in errors.
    path = tmp_path / "old.yaml"
    path.write_text("model: smol\ntorch_dtype: fp32\ngradient_checkpointing: true\n")
    old = load_train_config("sft", path)
    assert old.dtype == "fp32" and old.gradient_checkpointing is True
    path.write_text("model: smol\ndtype: float8\n")
    with pytest.raises(ConfigError, match="dtype must be one of auto, bf16, fp16, fp32"):
        load_train_config("cpt", path)
    with pytest.raises(ConfigError, match="attn_implementation must be one of"):
        config_class("cpt").from_overrides({"attn_implementation": "flash"})
    with pytest.raises(ConfigError, match="fp16 trains LoRA adapters only"):
        config_class("cpt").from_overrides({"dtype": "fp16"})


def test_bf16_load_gives_bf16_weights_and_auto_follows_precision(tiny: Path) -> None:
    cfg = config_class("cpt").from_overrides({"model": str(tiny), "dtype": "bf16", "attn_implementation": "sdpa"})
    model = load_model(start_chain(str(tiny), tiny), cfg)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert model.config._attn_implementation == "sdpa"
    # LoRA on bf16 weights: the base stays bf16, the adapters train.
    lora = config_class("cpt").from_overrides({"model": str(tiny), "dtype": "bf16", "lora": True})
    peft = load_model(start_chain(str(tiny), tiny), lora)
    frozen = {p.dtype for p in peft.parameters() if not p.requires_grad}
    assert frozen == {torch.bfloat16} and any(p.requires_grad for p in peft.parameters())
    # auto: bf16 weights where precision resolves to bf16 (a GPU with bf16), fp32 where it does not.
    assert weights_choice(config_class("cpt").from_overrides({"precision": "bf16"}), cuda=False).dtype == torch.bfloat16
    assert weights_choice(config_class("cpt").from_overrides({"precision": "fp32"}), cuda=False).dtype == torch.float32


@pytest.mark.skipif(importlib.util.find_spec("flash_attn") is not None, reason="flash-attn is installed here")
def test_missing_flash_attention_is_a_clear_error() -> None:
    cfg = config_class("sft").from_overrides({"attn_implementation": "flash_attention_2", "dtype": "bf16"})
    with pytest.raises(TrainInputError, match="needs the flash-attn package, which is not installed") as err:
        weights_choice(cfg)
    assert "sdpa" in err.value.hint


def test_use_vllm_without_vllm_is_a_clear_error(tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    from agentworld.train.gspo import build_trainer

    cfg = config_class("gspo").from_overrides({"data": str(tmp_path), "use_vllm": True, "vllm_mode": "colocate"})
    with pytest.raises(TrainInputError, match="use_vllm needs the vllm package"):
        build_trainer(cfg)


def test_gradient_checkpointing_one_lora_step(tmp_path: Path, tiny: Path) -> None:
    data = tmp_path / "cpt"
    build_cpt(CPTConfig(inputs=[str(EXAMPLES / "trajectories.jsonl")], output_dir=str(data), tokenizer=str(tiny),
                        max_length=1024, workers=1))
    cfg = config_class("cpt").from_overrides({
        "data": str(data), "model": str(tiny), "output_dir": str(tmp_path / "out"), "lora": True,
        "gradient_checkpointing": True, "precision": "fp32", "max_steps": 1, "save_steps": 10, "logging_steps": 1,
        "learning_rate": 1e-2,
    })
    trainer, tokenizer = build_trainer(cfg)
    result = run_trainer(trainer, cfg, tokenizer)
    assert result.global_step == 1 and math.isfinite(result.metrics["train_loss"])
    # The blocks really recomputed their activations (the Trainer turns it on from the config).
    assert any(getattr(m, "gradient_checkpointing", False) for m in trainer.model.modules())
    saved = read_train_config(tmp_path / "out")
    assert saved.gradient_checkpointing is True and saved.dtype == "auto"
    assert json.loads((tmp_path / "out" / "adapter_config.json").read_text())["r"] == cfg.lora_r
