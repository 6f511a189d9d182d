"""Packing, builder configs and resume logs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentworld.data.config import CPTConfig, RLConfig, SFTConfig, build_config, field_help, load_config
from agentworld.data.packing import IGNORE_INDEX, PackItem, pack, truncate
from agentworld.data.resume import ConfigChanged, ResumeLog

CONFIGS = Path(__file__).parents[1] / "configs" / "data"


def test_pack_fills_rows_without_splitting_samples() -> None:
    rng = random.Random(0)
    items = []
    for i in range(200):
        n = rng.randint(1, 120)
        items.append(PackItem(f"s{i}", [i % 50 + 1] * n, [rng.randint(0, 1) for _ in range(n)]))
    rows = pack(items, 128)
    seen = [sid for r in rows for sid in r.sample_ids]
    assert sorted(seen) == sorted(i.sample_id for i in items)
    by_id = {i.sample_id: i for i in items}
    for r in rows:
        assert len(r.input_ids) <= 128 and sum(r.seq_lengths) == len(r.input_ids)
        pos = 0
        for sid, n in zip(r.sample_ids, r.seq_lengths, strict=True):
            item = by_id[sid]
            assert r.input_ids[pos : pos + n] == item.input_ids
            assert r.position_ids[pos : pos + n] == list(range(n))
            expect = [t if m else IGNORE_INDEX for t, m in zip(item.input_ids, item.loss_mask, strict=True)]
            assert r.labels[pos : pos + n] == expect
            pos += n
    # best fit wastes little: total tokens / capacity
    assert sum(len(i) for i in items) / (128 * len(rows)) > 0.9
    assert [r.sample_ids for r in pack(list(reversed(items)), 128)] == [r.sample_ids for r in rows]
    with pytest.raises(ValueError):
        pack([PackItem("big", [1] * 200, [1] * 200)], 128)
    cut, was_cut = truncate(PackItem("big", [1] * 200, [0] * 200), 128)
    assert was_cut and len(cut) == 128
    # an answer running past the cut leaves the loss; finished answers stay
    mask = [0] * 10 + [1] * 10 + [0] * 10 + [1] * 20
    cut, _ = truncate(PackItem("m", list(range(50)), mask), 40)
    assert cut.loss_mask == [0] * 10 + [1] * 10 + [0] * 20
    cut, _ = truncate(PackItem("m", list(range(50)), mask), 20)
    assert cut.loss_mask == [0] * 10 + [1] * 10


def test_shipped_configs_load_and_every_field_has_help() -> None:
    for name, cls in (("cpt", CPTConfig), ("sft", SFTConfig), ("rl", RLConfig)):
        cfg = load_config(cls, CONFIGS / f"{name}.yaml")
        assert isinstance(cfg, cls)
        assert all(h for h in field_help(cls).values())


def test_config_errors_name_the_source_and_suggest() -> None:
    with pytest.raises(ValueError, match=r"x\.yaml: unknown key 'max_lenght' \(did you mean 'max_length'\?\)"):
        build_config(CPTConfig, {"max_lenght": 5}, "x.yaml")
    with pytest.raises(ValueError, match="k must be int"):
        build_config(SFTConfig, {"k": "three"}, "x.yaml")
    assert build_config(SFTConfig, {"threshold": 4}).threshold == 4.0


def test_resume_log_refuses_a_different_config(tmp_path: Path) -> None:
    cfg = CPTConfig(output_dir=str(tmp_path), max_length=64)
    with ResumeLog(tmp_path, "cpt", cfg) as log:
        log.add("a", {"v": 1})
    with open(tmp_path / "cpt.log.jsonl", "a") as fh:
        fh.write('{"key": "b", "v"')  # a killed writer's torn line
    resumed = ResumeLog(tmp_path, "cpt", CPTConfig(output_dir=str(tmp_path), max_length=64, workers=7))
    assert set(resumed.done) == {"a"}
    resumed.close()
    with pytest.raises(ConfigChanged, match="max_length"):
        ResumeLog(tmp_path, "cpt", CPTConfig(output_dir=str(tmp_path), max_length=128))
    fresh = ResumeLog(tmp_path, "cpt", CPTConfig(output_dir=str(tmp_path), max_length=128), restart=True)
    assert fresh.done == {}


def test_knowledge_from_jsonl_and_a_search_corpus(tmp_path: Path) -> None:
    from agentworld.data.knowledge import knowledge_messages, read_knowledge
    from agentworld.envs.search.index import CorpusConfig, build_corpus, passages
    from agentworld.jsonl import LineError

    build_corpus(tmp_path / "corpus", CorpusConfig(sources=["man"], max_pages=2))
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"text": "tar -x extracts", "title": "tar"}\n{"title": "no text"}\n')
    recs = list(read_knowledge([str(notes), str(tmp_path / "corpus")]))
    errors = [r for r in recs if isinstance(r, LineError)]
    good = [r for r in recs if not isinstance(r, LineError)]
    assert [e.line for e in errors] == [2]
    assert good[0][1]["text"] == "tar -x extracts"
    corpus = [r for _, r in good[1:]]
    assert corpus and all(r["domain"] == "search" and r["url"].startswith("https://") for r in corpus)
    # the same passages the search index holds
    import sqlite3

    first_url = corpus[0]["url"]
    with sqlite3.connect(tmp_path / "corpus" / "pages.sqlite") as db:
        (page_text,) = db.execute("SELECT text FROM pages WHERE url = ?", (first_url,)).fetchone()
    assert [r["text"] for r in corpus if r["url"] == first_url] == list(passages(page_text))
    assert len({k for k, _ in good}) == len(good)  # stable, unique keys
    assert len(list(read_knowledge([str(tmp_path / "corpus")], 3))) == 3
    msgs = knowledge_messages(corpus[0])
    assert msgs[0]["content"].startswith("[search] ") and msgs[1]["content"] == corpus[0]["text"]
    with pytest.raises(FileNotFoundError):
        list(read_knowledge([str(tmp_path / "missing")]))
