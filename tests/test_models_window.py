"""Sessions longer than a local model's context lose their oldest exchanges, never the
system prompt or the action (agentworld.models.window), on the hf and llama.cpp engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.models import GenerationConfig, load_backend
from agentworld.models.tiny import build_tiny_checkpoint
from agentworld.models.window import fit_history

BENCH = Path(__file__).parents[1] / "benchmarks" / "local"


def session(turns: int, *, system: bool = True) -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "S" * 50}] if system else []
    for i in range(turns):
        msgs += [{"role": "user", "content": f"a{i} " + "x" * 20}, {"role": "assistant", "content": f"o{i} " + "y" * 80}]
    return [*msgs, {"role": "user", "content": "next action"}]


def chars(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_fit_drops_the_fewest_oldest_exchanges() -> None:
    msgs = session(10)
    assert fit_history(msgs, chars, 10_000) is msgs and fit_history(msgs, chars, 0) is msgs
    fitted = fit_history(msgs, chars, 600)
    kept = len(fitted) - 2
    assert chars(fitted) <= 600 and chars([msgs[0], *msgs[-(kept + 3) :]]) > 600  # one more exchange would not fit
    assert fitted[0] == msgs[0] and fitted[-1] == msgs[-1]
    assert fitted[1:-1] == msgs[len(msgs) - len(fitted) + 1 : -1]  # a suffix of the history, in order
    assert [m["role"] for m in fitted[1:-1]][::2] == ["user"] * ((len(fitted) - 2) // 2)  # whole exchanges
    # nothing left to drop: the system prompt and the action as they are
    assert fit_history(msgs, chars, 10) == [msgs[0], msgs[-1]]
    assert fit_history(session(3, system=False), chars, 200)[-1]["content"] == "next action"


def test_hf_backend_reads_at_most_its_trained_context(tmp_path: Path) -> None:
    ckpt = build_tiny_checkpoint(tmp_path / "ckpt", seed=1)
    backend = load_backend("hf", path=ckpt, max_context=256)
    long = session(40)
    [c] = backend.generate_once(long, GenerationConfig(max_tokens=8))
    assert c.prompt_tokens is not None and c.prompt_tokens <= 256 - 8
    assert backend.model_id.endswith("/ctx256")  # answers under another window are cached apart
    full = load_backend("hf", path=ckpt, max_context=0)
    [everything] = full.generate_once(long, GenerationConfig(max_tokens=8))
    assert everything.prompt_tokens is not None and everything.prompt_tokens > 1000


@pytest.mark.model
def test_smol_on_llamacpp_fits_a_long_web_session() -> None:
    """A recorded web session of over 12k tokens, past the 8,192 SmolLM2 was trained on
    (the default window); answered from its newest exchanges. A 1,024-token window keeps
    the test's prompt processing short on a CPU."""
    from agentworld.prompts import sample_messages
    from agentworld.records.bench import load_bench_dir

    samples = load_bench_dir(BENCH, domains=["web"]).samples
    backend = load_backend("smol", engine="llamacpp", max_batch=1, max_context=1024)
    assert backend.engine._trained_context == 8192
    long = max(samples, key=lambda s: len(s.stored_history()))
    msgs = sample_messages(long)
    assert len(backend.engine.tokenize(backend.prompt_text(msgs))) > 8192
    [c] = backend.generate_once(msgs, GenerationConfig(max_tokens=4))
    assert c.prompt_tokens is not None and 300 < c.prompt_tokens <= 1024 - 4
