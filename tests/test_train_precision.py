"""Training precision: ``auto`` resolves at run time, bf16 only where this machine runs it faster."""

from __future__ import annotations

import pytest

from agentworld.config import ConfigError
from agentworld.models.hf import cpu_has_native_bf16
from agentworld.train.config import load_train_config
from agentworld.train.precision import choose_precision, measure_cpu_bf16


def test_explicit_precision_is_kept_and_auto_measures_the_cpu() -> None:
    assert choose_precision("bf16", cuda=False).bf16 and not choose_precision("fp32", cuda=False).bf16
    auto = choose_precision("auto", cuda=False)
    if not cpu_has_native_bf16():
        assert not auto.bf16 and "no native bf16" in auto.why  # emulated bf16: never chosen
    else:  # the decision follows a measurement and says what it measured
        assert ("faster" in auto.why) == auto.bf16 and "x" in measure_cpu_bf16().why


def test_configs_say_auto_and_old_bf16_keys_still_mean_bf16(tmp_path) -> None:
    from pathlib import Path

    root = Path(__file__).parents[1] / "configs" / "train"
    for name in ("cpt", "sft", "gspo", "cpt_smol_default"):
        kind = "cpt" if name.startswith("cpt") else name
        cfg = load_train_config(kind, root / f"{name}.yaml")
        assert cfg.precision == "auto" and not cfg.bf16, name
    old = tmp_path / "old.yaml"
    old.write_text("bf16: true\n")
    assert load_train_config("cpt", old).precision == "bf16"
    bad = tmp_path / "bad.yaml"
    bad.write_text("bf16: true\nprecision: fp32\n")
    with pytest.raises(ConfigError, match="precision"):
        load_train_config("cpt", bad)
    bad.write_text("precision: fp16\n")
    with pytest.raises(ConfigError, match="precision"):
        load_train_config("cpt", bad)
