"""The hf backend with a tiny random Llama checkpoint (and a real PEFT adapter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.models.contract import OBSERVATION_BLOCK
from agentworld.models.tiny import build_tiny_checkpoint


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", seed=1)


@pytest.fixture(scope="module")
def backend(ckpt: Path):
    # fp32 pinned: the batching tests compare batched with single answers token for token,
    # which bf16 (what precision=auto picks on a CPU with native bf16) does not promise.
    return load_backend("hf", path=ckpt, max_batch=4, precision="fp32")


def _msgs(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a world model."}, {"role": "user", "content": "ls -la " * (i + 1)}]


def test_checkpoint_is_reused_and_has_a_chat_template(ckpt: Path, backend) -> None:
    before = (ckpt / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_checkpoint(ckpt) == ckpt
    assert (ckpt / "model.safetensors").stat().st_mtime_ns == before
    text = backend.prompt_text(_msgs(0))
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert backend.model_id.startswith("ckpt@")


async def test_batched_left_padding_matches_single(backend) -> None:
    wm = WorldModel(backend, concurrency=8)
    config = GenerationConfig(max_tokens=10)
    batched = {i: p[0] async for i, p in wm.map([_msgs(i) for i in range(8)], config)}
    # the runner forces the answer block (models/contract.py): alone, ask for it too
    singles = [backend.generate_once(_msgs(i), config, OBSERVATION_BLOCK)[0] for i in range(8)]
    assert [batched[i].text for i in range(8)] == [s.text for s in singles]
    assert len({s.text for s in singles}) > 1  # outputs depend on the prompt
    # Concurrency limit honoured, batches capped at max_batch rows.
    assert wm.stats.peak_in_flight <= 8 and 1 < backend.batcher.peak_rows <= 4
    p = batched[0]
    assert p.prompt_tokens and p.completion_tokens == 10 and p.extra["finish_reason"] == "length"


async def test_seeded_sampling_and_n(backend) -> None:
    wm = WorldModel(backend)
    config = GenerationConfig(temperature=1.0, max_tokens=12, seed=5, n=3)
    first = [p.text for p in await wm.predict(_msgs(0), config)]
    again = [p.text for p in await wm.predict(_msgs(0), config)]
    other = [p.text for p in await wm.predict(_msgs(0), GenerationConfig(temperature=1.0, max_tokens=12, seed=6, n=3))]
    assert first == again and first != other and len(set(first)) == 3


def test_stop_strings_cut_the_text(backend) -> None:
    [free] = backend.generate_once(_msgs(2), GenerationConfig(max_tokens=16))
    assert len(free.text) > 4
    stop = free.text[2:4]
    [cut] = backend.generate_once(_msgs(2), GenerationConfig(max_tokens=16, stop=(stop,)))
    assert cut.text == free.text[: free.text.index(stop)] and cut.finish_reason == "stop"


def test_adapter_changes_model_and_id(ckpt: Path, backend, tmp_path: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(ckpt),
        LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    model.save_pretrained(tmp_path / "adapter")
    tuned = load_backend("hf", path=ckpt, adapter=tmp_path / "adapter")
    assert tuned.model_id != backend.model_id
    config = GenerationConfig(max_tokens=12)
    outputs = [(tuned.generate_once(_msgs(i), config)[0].text, backend.generate_once(_msgs(i), config)[0].text) for i in range(3)]
    assert any(a != b for a, b in outputs)
    # the adapter folder alone: loaded on the base its adapter_config.json names
    alone = load_backend("hf", path=tmp_path / "adapter")
    assert alone.model_id == tuned.model_id.replace(ckpt.name, "adapter", 1)
    assert [alone.generate_once(_msgs(i), config)[0].text for i in range(3)] == [a for a, _ in outputs]
    (tmp_path / "moved").mkdir()
    for f in (tmp_path / "adapter").iterdir():
        cfg = f.read_text().replace(str(ckpt), "elsewhere/ckpt") if f.suffix == ".json" else None
        (tmp_path / "moved" / f.name).write_bytes(cfg.encode() if cfg is not None else f.read_bytes())
    with pytest.raises(FileNotFoundError, match="adapter="):  # its base is gone: say how to load it
        load_backend("hf", path=tmp_path / "moved")


def test_not_a_checkpoint(tmp_path: Path, ckpt: Path) -> None:
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_backend("hf", path=tmp_path)
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        load_backend("hf", path=ckpt, adapter=tmp_path)
    with pytest.raises(ValueError, match="precision"):
        load_backend("hf", path=ckpt, precision="fp8")


async def test_a_failing_batch_fails_its_callers_not_the_run(ckpt: Path) -> None:
    backend = load_backend("hf", path=ckpt, precision="fp32")
    wm = WorldModel(backend, concurrency=4)
    await backend.aclose()  # the model is gone: every generate fails
    results = [p async for _, p in wm.map([_msgs(i) for i in range(4)], GenerationConfig(max_tokens=4))]
    assert all(p[0].error and not p[0].ok for p in results) and wm.stats.failures == 4


async def test_seeded_partial_cache_hit_keeps_sample_order(backend, tmp_path: Path) -> None:
    from agentworld.models import ResponseCache

    seeded = GenerationConfig(temperature=1.0, max_tokens=8, seed=11)
    fresh = [p.text for p in await WorldModel(backend).predict(_msgs(1), seeded.merged(GenerationConfig(n=3)))]
    wm = WorldModel(backend, cache=ResponseCache(tmp_path / "c.sqlite"))
    await wm.predict(_msgs(1), seeded)
    preds = await wm.predict(_msgs(1), seeded.merged(GenerationConfig(n=3)))
    assert [p.cached for p in preds] == [True, False, False]
    assert [p.text for p in preds] == fresh
