"""Response cache and WorldModel runner over the real retrieval backend."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest

from agentworld.models import (
    CacheMiss,
    Completion,
    GenerationConfig,
    ResponseCache,
    WorldModel,
    load_backend,
)
from agentworld.models.cache import cache_key
from agentworld.parsing import Status
from agentworld.prompts import sample_messages
from agentworld.records.bench import load_bench_dir


@pytest.fixture
def wm_factory(awbench_dir: Path, tmp_path: Path):
    def make(mode: str = "rw") -> WorldModel:
        cache = ResponseCache(tmp_path / "cache.sqlite", mode=mode)
        return WorldModel(load_backend("retrieval", source=awbench_dir), cache=cache)

    return make


def _messages(awbench_dir: Path, i: int = 0):
    return sample_messages(load_bench_dir(awbench_dir).samples[i])


def _domain(awbench_dir: Path, i: int = 0) -> str:
    return load_bench_dir(awbench_dir).samples[i].domain


def test_key_covers_every_setting() -> None:
    msgs = [{"role": "user", "content": "ls"}]
    base = GenerationConfig().resolved()
    k = cache_key("hf", "m@1", msgs, base, 0)
    assert k == cache_key("hf", "m@1", msgs, base, 0)
    variants = [
        cache_key("openai", "m@1", msgs, base, 0),
        cache_key("hf", "m@2", msgs, base, 0),
        cache_key("hf", "m@1", [{"role": "user", "content": "ls -l"}], base, 0),
        cache_key("hf", "m@1", msgs, base.merged(GenerationConfig(temperature=0.7)), 0),
        cache_key("hf", "m@1", msgs, base.merged(GenerationConfig(seed=3)), 0),
        cache_key("hf", "m@1", msgs, base, 1),
        cache_key("hf", "m@1", msgs, base, 0, {"domain": "terminal"}),
        cache_key("hf", "m@1", msgs, base, 0, {"domain": "terminal", "demos": 2, "demo_source": "t@1"}),
        cache_key("hf", "m@1", msgs, base, 0, {"domain": "terminal", "demos": 4, "demo_source": "t@1"}),
        cache_key("hf", "m@1", msgs, base, 0, {"domain": "terminal", "demos": 2, "demo_source": "t@2"}),
    ]
    assert len(set(variants + [k])) == len(variants) + 1
    # n is not part of the key: sample 0 of an n=3 call is sample 0 of an n=1 call.
    assert cache_key("hf", "m@1", msgs, base.merged(GenerationConfig(n=3)), 0) == k
    # No context: the key is the one written before contexts existed.
    assert cache_key("hf", "m@1", msgs, base, 0, {}) == k


async def test_miss_then_hit_and_n_entries(wm_factory, awbench_dir: Path) -> None:
    wm = wm_factory()
    msgs, dom = _messages(awbench_dir), _domain(awbench_dir)
    [first] = await wm.predict(msgs, domain=dom)
    assert first.ok and not first.cached and first.status is Status.complete
    [again] = await wm.predict(msgs, domain=dom)
    assert again.cached and again.text == first.text and again.observation == first.observation
    preds = await wm.predict(msgs, GenerationConfig(n=3), domain=dom)
    assert [p.sample_index for p in preds] == [0, 1, 2]
    assert preds[0].cached and not preds[1].cached and not preds[2].cached
    assert len(wm.cache) == 3
    assert wm.stats.cached_samples == 2 and wm.stats.live_samples == 3
    await wm.aclose()


async def test_strict_replay(wm_factory, awbench_dir: Path) -> None:
    wm = wm_factory("rw")
    recorded, dom = _messages(awbench_dir, 0), _domain(awbench_dir, 0)
    await wm.predict(recorded, domain=dom)
    await wm.aclose()
    replay = wm_factory("replay")
    [hit] = await replay.predict(recorded, domain=dom)
    assert hit.cached
    with pytest.raises(CacheMiss):
        await replay.predict(_messages(awbench_dir, 1), domain=_domain(awbench_dir, 1))
    with pytest.raises(CacheMiss):
        await replay.predict(recorded, GenerationConfig(temperature=0.5), domain=dom)
    assert replay.stats.live_samples == 0
    await replay.aclose()


def test_replay_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ResponseCache(tmp_path / "none.sqlite", mode="replay")


def test_off_mode_never_stores(awbench_dir: Path, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite", mode="off")
    wm = WorldModel(load_backend("retrieval", source=awbench_dir), cache=cache)
    msgs, dom = _messages(awbench_dir), _domain(awbench_dir)
    assert not any(p.cached for p in wm.predict_sync(msgs, domain=dom) + wm.predict_sync(msgs, domain=dom))
    assert not (tmp_path / "c.sqlite").exists()


async def test_failed_call_returns_error_and_is_not_cached(wm_factory, awbench_dir: Path) -> None:
    wm = wm_factory()
    msgs = _messages(awbench_dir) + [{"role": "assistant", "content": "not an action"}]
    preds = await wm.predict(msgs, GenerationConfig(n=2), domain=_domain(awbench_dir))
    assert len(preds) == 2 and all(p.error and not p.ok for p in preds)
    assert wm.stats.failures == 1 and len(wm.cache) == 0
    await wm.aclose()


def _writer(path: str, worker: int, count: int) -> None:
    cache = ResponseCache(path)
    for i in range(count):
        cache.put(f"w{worker}-{i}", Completion(text=f"{worker}:{i}"), backend="b", model="m", latency_s=0.0)
    cache.close()


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = ResponseCache(path)
    assert len(cache) == 600
    hit = cache.get("w3-149")
    assert hit is not None and hit[0].text == "3:149"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
