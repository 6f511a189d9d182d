"""The numpy batch masking agrees with the per-turn definition (``turn_stats``/``keep_draw``)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from agentworld.data import _wordsets
from agentworld.data.masking import MaskBatch, keep_draw, keep_draws, mask_turns, reference_batch, trajectory_turn_keys
from agentworld.data.source import load_inputs

RECORDED = Path(__file__).resolve().parents[1] / "benchmarks" / "local" / "trajectories"


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the numba kernel and with the numpy fallback."""
    if request.param == "numpy":
        monkeypatch.setattr(_wordsets, "_compiled_kernel", lambda: None)
    elif _wordsets._compiled_kernel() is None:
        pytest.skip("numba is not installed")
    else:
        monkeypatch.setattr(_wordsets, "COMPILED_MIN_TURNS", 0)
    return request.param


def assert_same(batch: MaskBatch, ref: MaskBatch) -> None:
    for name in MaskBatch.__dataclass_fields__:
        got, want = getattr(batch, name), getattr(ref, name)
        bad = np.flatnonzero(got != want)
        assert len(bad) == 0, f"{name} differs at turns {bad[:10].tolist()}"


@pytest.mark.parametrize("seed", [0, 11])
def test_recorded_trajectories_match_the_definition(seed: int) -> None:
    trajs, errors = load_inputs([str(RECORDED)])
    assert not errors and len(trajs) > 50
    items = list(trajectory_turn_keys(trajs))
    ref = reference_batch(items, seed)
    assert len(set(ref.category.tolist())) >= 5  # the recorded turns exercise most rules
    assert_same(mask_turns(items, seed=seed, workers=1), ref)
    assert_same(mask_turns(items, seed=seed, workers=1, chunk_size=333), ref)


HARD_TEXTS = [
    "",
    " ",
    "ΑΣ ΟΔΟΣ σ ς",  # final sigma depends on the neighbours: each text lowers on its own
    "İstanbul İİ i̇",  # lowering grows the text
    "naïve café NAÏVE CAFÉ ß SS",
    "数据 数据集 データ ١٢٣ ⅷ ²",  # CJK, Arabic-Indic digits, numeric letters
    "emoji 🙂 𝔘𝔫𝔦 𝔘𝔫𝔦 𐐀𐐨",  # astral characters, word and non-word
    "snake_case __init__ a_b-c",
    "nul\x00byte\x00 nul",
    "x" * 7 + " " + "y" * 8 + " " + "z" * 9 + " " + "abcdefgh" * 40 + " " + "abcdefgh" * 40 + "q",
    "deadbeef" * 3 + " " + "deadbeef" * 3,
    '{"path": "/tmp/nums.txt\\n", "ok": true}',
]


def test_hard_texts_match_the_definition() -> None:
    rng = random.Random(4)
    pieces = HARD_TEXTS + ["cat nums.txt 3 5", "ls -la /etc", "Übung ÜBUNG übung"]
    items = []
    for i in range(2 * _wordsets.BATCH_TURNS + 77):  # crosses batch boundaries
        a = " ".join(rng.choices(pieces, k=rng.randint(0, 3)))
        o = "\n".join(rng.choices(pieces, k=rng.randint(0, 4)))
        items.append((f"t{i % 97}", i, a, o))
    items += [("solo", 1, t, u) for t in HARD_TEXTS for u in HARD_TEXTS]
    assert_same(mask_turns(items, seed=2, workers=1, chunk_size=1000), reference_batch(items, 2))


def test_all_ascii_and_all_unicode_batches() -> None:
    ascii_items = [("a", i, f"grep foo{i % 5} bar.txt", f"bar.txt:{i} foo{i % 7} FOO") for i in range(50)]
    uni_items = [("u", i, f"grép föo{i % 5}", f"Föo{i % 3} ΣΑΣ {i}") for i in range(50)]
    for items in (ascii_items, uni_items, ascii_items[:1], uni_items[:1]):
        assert_same(mask_turns(items, seed=0, workers=1), reference_batch(items, 0))
    assert len(mask_turns([], seed=0)) == 0


def test_keep_draws_are_keep_draw() -> None:
    keys = [(f"traj-{i}", i % 9 + 1) for i in range(500)] + [("ünï", 3), ("", 0)]
    draws = keep_draws(7, keys)
    assert draws.tolist() == [keep_draw(7, tid, idx) for tid, idx in keys]
