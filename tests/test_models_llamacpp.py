"""The llamacpp backend and the smol engine choice, on the real embedded SmolLM2 model."""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

import agentworld.models.smol as smol
from agentworld.models import BackendSpecError, GenerationConfig, load_backend
from agentworld.models.smol import adapter_hash, merged_gguf, packaged_adapter, pick_engine
from agentworld.prompts import build_messages, build_system_prompt, sample_messages
from agentworld.records.bench import load_bench_dir

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh")

BENCH = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "local")
HISTORY = [('[{"keystrokes": "pwd\\n", "duration": 1.0}]', "root@sandbox:/workspace# pwd\n/workspace\nroot@sandbox:/workspace#")]


def _msgs(i: int) -> list[dict[str, str]]:
    action = f'[{{"keystrokes": "ls -la /srv/data{i}\\n", "duration": 1.0}}]'
    return build_messages(build_system_prompt("terminal"), HISTORY, action)


@pytest.fixture(scope="module")
def gguf_file():
    return merged_gguf(packaged_adapter())


@pytest.fixture(scope="module")
def backend(gguf_file):
    from agentworld.models.llamacpp import LlamaCppBackend

    b = LlamaCppBackend(gguf_file, max_batch=4, context=8192, tokenizer=smol.converted_checkpoint() / "tokenizer.json")
    yield b
    asyncio.run(b.aclose())


def test_engine_selection(monkeypatch) -> None:
    assert pick_engine() == "hf" and pick_engine("auto", precision="fp32") == "hf"
    assert pick_engine("llamacpp") == "llamacpp"
    assert pick_engine("hf") == "hf"
    with pytest.raises(ValueError, match="engine must be one of auto, llamacpp, hf"):
        pick_engine("vllm")
    with pytest.raises(ValueError, match="precision applies to engine=hf only"):
        pick_engine("llamacpp", precision="bf16")
    monkeypatch.setattr(smol, "llamacpp_installed", lambda: False)
    assert pick_engine() == "hf"
    with pytest.raises(ImportError, match=r"pip install 'agentworld\[llamacpp\]'"):
        pick_engine("llamacpp")
    with pytest.raises(BackendSpecError, match="must be an integer"):
        load_backend("smol,engine=llamacpp,threads=two")


def test_bad_gguf_path_gives_a_clear_error(tmp_path) -> None:
    from agentworld.models.llamacpp import GGUFError

    with pytest.raises(GGUFError, match="GGUF file not found: .*missing.gguf"):
        load_backend(f"llamacpp:{tmp_path / 'missing.gguf'}")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(GGUFError, match="junk.gguf: llama.cpp could not load this file"):
        load_backend(f"llamacpp:{junk}")
    with pytest.raises(BackendSpecError, match="needs path"):
        load_backend("llamacpp")


@pytest.mark.slow
@pytest.mark.model
def test_conversion_is_cached_by_adapter_hash(gguf_file, tmp_path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    adapter = packaged_adapter()
    assert adapter_hash(adapter) in gguf_file.name and gguf_file.name.endswith(".f16.gguf")
    mtime = gguf_file.stat().st_mtime_ns
    assert merged_gguf(adapter) == gguf_file and gguf_file.stat().st_mtime_ns == mtime  # reused, not rebuilt
    # A different adapter is a different file, written into the cache dir given.
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(smol.converted_checkpoint())
    lora = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    other = merged_gguf(tmp_path / "adapter", tmp_path / "cache")
    assert other.parent.is_relative_to(tmp_path / "cache") and adapter_hash(tmp_path / "adapter") in other.name
    assert not list(other.parent.glob(".convert-*"))  # no temporary file left behind
    # Only q_proj moved: the other tensors are the source's, so the rotary reordering of
    # q/k is checked against the source file too (a wrong order would move k as well).
    import gguf

    src = {t.name: t for t in gguf.GGUFReader(smol.gguf_path()).tensors}
    out = {t.name: t for t in gguf.GGUFReader(other).tensors}
    assert list(src) == list(out)
    for name in ("blk.0.attn_k.weight", "blk.0.attn_q.weight", "blk.3.ffn_down.weight"):
        want = gguf.quants.dequantize(src[name].data, src[name].tensor_type)
        got = gguf.quants.dequantize(out[name].data, out[name].tensor_type)
        moved = float(np.abs(got - want).max())
        assert (moved > 0.05) if "attn_q" in name else (moved < 0.02), (name, moved)


@pytest.mark.slow
@pytest.mark.model
def test_prompt_tokens_match_transformers(backend) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smol.converted_checkpoint())
    records = load_bench_dir(BENCH).samples[::40]
    assert len(records) >= 20
    for record in records:
        m = sample_messages(record)
        text = tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False)
        assert backend.prompt_text(m) == text
        assert backend.tokenize(text) == tok(text, add_special_tokens=False)["input_ids"], record.id


@pytest.mark.slow
@pytest.mark.model
def test_backend_generates_batched_and_alone(backend) -> None:
    greedy = GenerationConfig(max_tokens=24)

    async def together():
        return await asyncio.gather(*(backend.complete(_msgs(i), greedy) for i in range(4)))

    batched = asyncio.run(together())
    alone = [backend.generate_once(_msgs(i), greedy) for i in range(4)]
    assert backend.peak_rows == 4  # all four were decoded in one step
    for [b], [a] in zip(batched, alone, strict=True):
        assert a.text and a.completion_tokens and a.prompt_tokens and a.prompt_tokens > 100
        assert b.text == a.text  # batching does not change a greedy answer
    [short] = backend.generate_once(_msgs(0), GenerationConfig(max_tokens=3))
    assert short.finish_reason == "length" and short.completion_tokens == 3
    stop = alone[0][0].text[4:8]
    [cut] = backend.generate_once(_msgs(0), GenerationConfig(max_tokens=24, stop=(stop,)))
    assert cut.finish_reason == "stop" and stop not in cut.text and alone[0][0].text.startswith(cut.text)
    sampled = GenerationConfig(temperature=2.0, top_k=200, seed=3, n=3, max_tokens=24)  # hot: the answers differ
    first, again = backend.generate_once(_msgs(1), sampled), backend.generate_once(_msgs(1), sampled)
    assert [c.text for c in first] == [c.text for c in again] and len({c.text for c in first}) > 1


@pytest.mark.slow
@pytest.mark.model
def test_smol_runs_on_llamacpp_when_asked(gguf_file) -> None:
    b = load_backend("smol,engine=llamacpp,max_batch=2,context=4096")
    try:
        assert b.engine_name == "llamacpp"
        assert b.model_id.startswith("SmolLM2-135M-Instruct@") and b.model_id.endswith("/llamacpp-f16")
        [c] = b.generate_once(_msgs(0), GenerationConfig(max_tokens=8))
        assert c.completion_tokens and c.finish_reason in ("stop", "length")
    finally:
        asyncio.run(b.aclose())


@pytest.mark.slow
@pytest.mark.model
def test_prefix_cache_reuses_whole_chunks_and_changes_no_answer(backend) -> None:
    """A session's next prompt extends its last one: the slot's cached chunks are reused,
    and the greedy answer is the one a fresh read gives."""
    # The first held-out session (ids name the template: terminal-test-<template>-1000000).
    turns = [s for s in load_bench_dir(BENCH, domains=["terminal"]).samples
             if s.trajectory_id.startswith("terminal-test-") and s.trajectory_id.endswith("-1000000")]
    first, second = (sample_messages(s) for s in sorted(turns, key=lambda s: s.turn_idx)[1:3])
    greedy = GenerationConfig(max_tokens=16)
    n_first = len(backend.tokenize(backend.prompt_text(first)))
    assert n_first > 512 and second[: len(first) - 1] == first[:-1]  # the history grew by a turn
    backend.forget_prefixes()
    backend.generate_once(first, greedy)
    reused = backend.reused_tokens
    [warm] = backend.generate_once(second, greedy)
    gained = backend.reused_tokens - reused
    assert gained > 0 and gained % 512 == 0 and gained <= n_first
    backend.prefix_cache = False
    try:
        backend.forget_prefixes()
        [cold] = backend.generate_once(second, greedy)
        assert backend.reused_tokens == reused + gained  # nothing reused with the cache off
    finally:
        backend.prefix_cache = True
    assert warm.text == cold.text and warm.prompt_tokens == cold.prompt_tokens


@pytest.mark.slow
@pytest.mark.model
def test_drafting_keeps_greedy_answers_and_accepts_copied_spans(backend) -> None:
    """Prompt-lookup drafts are verified in the sequence's own decode step: the greedy
    answers (alone and batched) are those of plain decoding, and answers that copy the
    prompt's repeated spans accept guesses."""
    from agentworld.models.contract import OBSERVATION_BLOCK
    from agentworld.prompts import OBS_OPEN

    listing = "total 12\ndrwxr-xr-x 2 root root 4096 Jan  1 00:00 .\ndrwxr-xr-x 3 root root 4096 Jan  1 00:00 ..\n"
    history = [(f'[{{"keystrokes": "ls -la /srv/data{i}\\n", "duration": 1.0}}]',
                f"root@sandbox:/workspace# ls -la /srv/data{i}\n{listing}root@sandbox:/workspace#") for i in range(3)]
    prompts = [build_messages(build_system_prompt("terminal"), history, f'[{{"keystrokes": "ls -la /srv/data{i}\\n"}}]')
               for i in (3, 4)]
    greedy = GenerationConfig(max_tokens=40)

    def answers() -> tuple[list[str], list[str]]:
        alone = [asyncio.run(backend.complete_block(p, greedy, OBSERVATION_BLOCK))[0].text for p in prompts]

        async def together():
            return await asyncio.gather(*(backend.complete_block(p, greedy, OBSERVATION_BLOCK) for p in prompts))

        return alone, [c.text for [c] in asyncio.run(together())]

    default = backend.draft
    try:
        backend.draft = 0
        plain = answers()
        before = backend.drafted_tokens, backend.accepted_tokens
        backend.draft = 8
        drafted = answers()
    finally:
        backend.draft = default
    assert drafted == plain and plain[0] == plain[1]  # batching changes no answer either
    assert all(t.startswith(OBS_OPEN) and "data" in t for t in plain[0]), plain
    guessed, accepted = backend.drafted_tokens - before[0], backend.accepted_tokens - before[1]
    assert 0 < accepted <= guessed
