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
        for sid, n in zip(r.sample_ids, r.seq_lengths):
            item = by_id[sid]
            assert r.input_ids[pos : pos + n] == item.input_ids
            assert r.position_ids[pos : pos + n] == list(range(n))
            expect = [t if m else IGNORE_INDEX for t, m in zip(item.input_ids, item.loss_mask)]
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
