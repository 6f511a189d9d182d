"""Turn-level loss masking: every category rule, its boundaries, precedence, seeded keep."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentworld.data.masking import (
    KEEP_RATE,
    SHORT_OBSERVATION_CHARS,
    Category,
    categorize,
    keep_turn,
    mask_turns,
    turn_stats,
)
from agentworld.seeding import unit_hash

W = [f"w{i:02d}" for i in range(60)]  # distinct words, three characters each


def text(words: list[str], length: int | None = None) -> str:
    """Words joined by spaces, padded to ``length`` chars by repeating the first word."""
    s = " ".join(words)
    if length is not None:
        assert length >= len(s)
        while len(s) + 4 <= length:
            s += " " + words[0]
        s += "." * (length - len(s))
    return s


def cat(action: str, obs: str) -> Category:
    return categorize(turn_stats(action, obs))


def test_stats_definitions() -> None:
    st = turn_stats("Cat  cat nums.TXT", "cat nums.txt\n3\n5")
    # A = {cat, nums, txt}; O = {cat, nums, txt, 3, 5}
    assert st.ol == 1.0
    assert st.nov == pytest.approx(2 / 5)
    assert st.jac == pytest.approx(3 / 5)
    assert st.r == pytest.approx(len("cat nums.txt\n3\n5") / len("Cat  cat nums.TXT"))


def test_empty_sets_do_not_divide_by_zero() -> None:
    st = turn_stats("", "")
    assert (st.ol, st.nov, st.jac, st.r) == (0.0, 0.0, 0.0, 0.0)
    assert turn_stats("", "abc def").r == len("abc def")


def test_echo_and_its_boundaries() -> None:
    a = text(W[:10])
    assert cat(a, text(W[:7])) is Category.echo  # OL = 0.7 exactly, NOV = 0
    assert cat(a, text(W[:6])) is Category.boilerplate  # OL = 0.6 < 0.7
    # NOV exactly 0.3 is not echo (strict <): 7 shared + 3 new out of 10
    st = turn_stats(text(W[:7]), text(W[:7] + W[20:23]))
    assert (st.ol, st.nov) == (1.0, pytest.approx(0.3))
    assert categorize(st) is Category.boilerplate
    assert cat(text(W[:8]), text(W[:8] + W[20:22])) is Category.echo  # NOV = 0.2


def test_boilerplate_and_its_boundaries() -> None:
    a = text(W[:10])
    assert cat(a, text(W[:5])) is Category.boilerplate  # OL = 0.5 exactly
    # OL just under 0.5 with NOV 0 and a short observation: transform (R < 1)
    assert cat(a, text(W[:4])) is Category.transform
    # NOV exactly 0.5 is no longer boilerplate
    st = turn_stats(text(W[:4]), text(W[:4] + W[20:24]))
    assert st.nov == 0.5 and st.ol == 1.0 and st.r > 1.5
    assert categorize(st) is Category.expansion
    st = turn_stats(text(W[:4], length=40), text(W[:4] + W[20:24], length=40))
    assert st.nov == 0.5 and st.r == 1.0
    assert categorize(st) is Category.action  # NOV >= 0.5 and R <= 1


def test_expansion_boundary_exact() -> None:
    a = text(W[:4], length=40)
    o = text(W[:4] + W[20:24], length=60)  # R = 1.5 exactly
    st = turn_stats(a, o)
    assert st.r == 1.5 and st.ol == 1.0 and st.nov == 0.5
    # not expansion (R must exceed 1.5); NOV 0.5 < 0.6 so not retrieval; R > 1 and long
    # observation so not action; NOV >= 0.5 so not transform -> other
    assert categorize(st) is Category.other
    assert cat(a, text(W[:4] + W[20:24], length=61)) is Category.expansion


def test_retrieval() -> None:
    a = text(W[:10], length=40)
    o = text(W[:3] + W[20:26], length=41)  # OL = 0.3, NOV = 6/9 >= 0.6, R > 1
    assert cat(a, o) is Category.retrieval
    assert cat(a, text(W[:3] + W[20:26], length=40)) is Category.action  # R = 1 -> not retrieval
    # NOV exactly 0.6: 4 shared + 6 new, OL = 0.4
    st = turn_stats(a, text(W[:4] + W[20:26], length=80))
    assert st.nov == pytest.approx(0.6) and st.ol == pytest.approx(0.4)
    assert categorize(st) is Category.retrieval
    # NOV 5/9 < 0.6 with R > 1 and a long observation: other
    assert cat(a, text(W[:4] + W[20:25], length=80)) is Category.other


def test_action_rule() -> None:
    a = text(W[:10], length=100)
    assert cat(a, text(W[30:34])) is Category.action  # NOV 1, R <= 1
    st = turn_stats(a, text(W[30:34], length=100))  # R = 1 exactly, long observation
    assert st.r == 1.0 and st.obs_chars >= SHORT_OBSERVATION_CHARS
    assert categorize(st) is Category.action


def test_short_observation_boundary() -> None:
    # R > 1 and NOV in [0.5, 0.6): action only when the observation is under 40 chars
    a = "w00 w01 w02 w03 w04 w05 w06 w07 w08 w09"[:15]  # words w00..w03, 15 chars
    o39 = text(["w00", "w20", "w21"] + ["w01"], length=39)  # A∩O = {w00,w01}, NOV = 2/4 = 0.5
    o40 = text(["w00", "w20", "w21"] + ["w01"], length=40)
    st39, st40 = turn_stats(a, o39), turn_stats(a, o40)
    assert st39.nov == 0.5 and st39.ol == 0.5 and st39.r > 1.5
    # OL 0.5, NOV 0.5, R > 1.5: expansion comes first in both cases
    assert categorize(st39) is Category.expansion and categorize(st40) is Category.expansion
    a_long = text(W[:8])  # 31 chars, OL = 2/8
    st39, st40 = turn_stats(a_long, o39), turn_stats(a_long, o40)
    assert st39.r > 1 and st39.nov == 0.5 and st39.ol < 0.5
    assert categorize(st39) is Category.action
    assert categorize(st40) is Category.other


def test_transform_and_other() -> None:
    a = text(W[:10], length=100)
    assert cat(a, text(W[:3], length=50)) is Category.transform  # OL .3, NOV 0, R .5
    assert cat(a, text(W[:3] + W[20:22], length=99)) is Category.transform  # NOV .4, R < 1
    assert cat(a, text(W[:3], length=100)) is Category.other  # R = 1 exactly
    assert cat(a, text(W[:3], length=150)) is Category.other


def test_precedence_first_rule_wins() -> None:
    # OL 1, NOV 0 also satisfies boilerplate and transform (R < 1): echo wins
    a = text(W[:5], length=100)
    st = turn_stats(a, text(W[:5]))
    assert st.ol == 1 and st.nov == 0 and st.r < 1
    assert categorize(st) is Category.echo
    # expansion before retrieval: OL .8, NOV .6, R 3 satisfies both
    a = text(W[:5])
    st = turn_stats(a, text(W[:4] + W[20:26], length=3 * len(a)))
    assert st.ol >= 0.5 and st.nov >= 0.6 and st.r > 1.5
    assert categorize(st) is Category.expansion
    # retrieval before action with a short observation
    st = turn_stats("w00 w01", text(["w00", "w20", "w21"], length=20))
    assert st.nov >= 0.6 and st.r > 1 and st.obs_chars < 40 and st.ol == 0.5
    assert categorize(st) is Category.expansion  # OL .5 and R > 1.5: expansion first of all
    st = turn_stats("w00 w01 w02", text(["w00", "w20", "w21"], length=20))
    assert st.ol < 0.5 and categorize(st) is Category.retrieval


def test_keep_rates_are_the_published_ones() -> None:
    assert {
        Category.echo: 0.05,
        Category.boilerplate: 0.10,
        Category.expansion: 1.0,
        Category.retrieval: 1.0,
        Category.action: 1.0,
        Category.transform: 0.5,
        Category.other: 1.0,
    } == KEEP_RATE


def test_partial_keep_is_a_seeded_hash_of_trajectory_and_turn() -> None:
    for idx in range(1, 50):
        expect = unit_hash(7, "loss-keep", "traj-a", idx) < 0.5
        assert keep_turn(7, "traj-a", idx, Category.transform) is expect
        assert keep_turn(7, "traj-a", idx, Category.action) is True
    decisions = [keep_turn(0, f"t{i}", 1, Category.echo) for i in range(20_000)]
    share = sum(decisions) / len(decisions)
    assert abs(share - 0.05) < 0.01
    other_seed = [keep_turn(1, f"t{i}", 1, Category.echo) for i in range(20_000)]
    assert decisions != other_seed


def test_batch_matches_scalar_and_ignores_order_and_workers() -> None:
    rng = random.Random(0)
    vocab = W[:30]
    items = []
    for i in range(3000):
        a = " ".join(rng.choices(vocab, k=rng.randint(1, 12)))
        o = " ".join(rng.choices(vocab, k=rng.randint(0, 40)))
        items.append((f"traj{i // 7}", i % 7 + 1, a, o))
    batch = mask_turns(items, seed=3, workers=1, chunk_size=500)
    for k in range(0, 3000, 37):
        tid, idx, a, o = items[k]
        c = categorize(turn_stats(a, o))
        assert batch.category[k] == c
        assert bool(batch.keep[k]) is keep_turn(3, tid, idx, c)
    assert len(set(batch.category.tolist())) >= 5
    order = list(range(3000))
    rng.shuffle(order)
    shuffled = mask_turns([items[k] for k in order], seed=3, workers=2, chunk_size=400)
    assert np.array_equal(shuffled.keep, batch.keep[order])
    assert np.array_equal(shuffled.category, batch.category[order])
