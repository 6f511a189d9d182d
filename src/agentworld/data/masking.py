"""Turn-level loss masking for CPT (docs/design.md#training-pipeline).

Every turn gets four statistics over the lowercased, deduplicated word sets A (action)
and O (observation): overlap OL = |A∩O|/|A|, novelty NOV = |O\\A|/|O|, jaccard
JAC = |A∩O|/|A∪O| (stored for analysis only) and the character length ratio
R = len(observation)/len(action). The first matching rule names the turn's category,
and the category's keep rate is the share of such turns whose tokens stay in the loss:

    echo        OL>=0.7 and NOV<0.3                         5%
    boilerplate OL>=0.5 and NOV<0.5                        10%
    expansion   OL>=0.5 and NOV>=0.5 and R>1.5            100%
    retrieval   NOV>=0.6 and R>1                          100%
    action      NOV>=0.5 and (R<=1 or short observation)  100%
    transform   NOV<0.5 and R<1                            50%
    other                                                 100%

A partial keep is decided per turn by a seeded hash of (trajectory id, turn index), so
the same turn gets the same decision in every run, worker count and order. Masked turns
stay in the input as context; only their loss is dropped.

Words are maximal runs of Unicode word characters (``\\w+``), so JSON punctuation and
shell quoting around a token do not hide it (``"nums.txt\\n"`` shares ``nums``/``txt``
with the observation). Empty sets give 0 for the ratio they would divide, and an empty
action gives R = len(observation) (as if the action were one character long).

The rules run on numpy arrays over whole batches (:mod:`agentworld.data._wordsets`
counts the word sets of a batch without a Python object per word) and batches are
spread over worker processes. :func:`turn_stats` is the readable per-turn definition;
:func:`reference_batch` applies it turn by turn, and the batch code must agree with it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from agentworld.data._wordsets import set_sizes
from agentworld.domains.presented import action_of
from agentworld.executors.data import OrderedMap
from agentworld.seeding import unit_hash

SHORT_OBSERVATION_CHARS = 40
"""An observation shorter than this many characters is "short" (action rule)."""

_WORD = re.compile(r"\w+")


class Category(IntEnum):
    """Turn categories in rule order (the first matching rule wins)."""

    echo = 0
    boilerplate = 1
    expansion = 2
    retrieval = 3
    action = 4
    transform = 5
    other = 6


KEEP_RATE: dict[Category, float] = {
    Category.echo: 0.05,
    Category.boilerplate: 0.10,
    Category.expansion: 1.0,
    Category.retrieval: 1.0,
    Category.action: 1.0,
    Category.transform: 0.5,
    Category.other: 1.0,
}
_KEEP_ARRAY = np.array([KEEP_RATE[c] for c in Category], dtype=np.float64)


@dataclass(frozen=True)
class TurnStats:
    """The statistics of one turn (see the module docstring)."""

    ol: float
    nov: float
    jac: float
    r: float
    action_chars: int
    obs_chars: int

    @property
    def short(self) -> bool:
        return self.obs_chars < SHORT_OBSERVATION_CHARS


def words(text: str) -> set[str]:
    """The lowercased, deduplicated word set of ``text``."""
    return set(_WORD.findall(text.lower()))


def turn_stats(action: str, observation: str) -> TurnStats:
    a, o = words(action), words(observation)
    inter = len(a & o)
    union = len(a) + len(o) - inter
    return TurnStats(
        ol=inter / len(a) if a else 0.0,
        nov=(len(o) - inter) / len(o) if o else 0.0,
        jac=inter / union if union else 0.0,
        r=len(observation) / max(len(action), 1),
        action_chars=len(action),
        obs_chars=len(observation),
    )


def classify(ol: np.ndarray, nov: np.ndarray, r: np.ndarray, obs_chars: np.ndarray) -> np.ndarray:
    """Category codes (``Category`` values, int8) for arrays of turn statistics."""
    short = obs_chars < SHORT_OBSERVATION_CHARS
    conditions = [
        (ol >= 0.7) & (nov < 0.3),
        (ol >= 0.5) & (nov < 0.5),
        (ol >= 0.5) & (nov >= 0.5) & (r > 1.5),
        (nov >= 0.6) & (r > 1),
        (nov >= 0.5) & ((r <= 1) | short),
        (nov < 0.5) & (r < 1),
    ]
    # np.select takes the first true condition: exactly the rule precedence.
    codes = [int(c) for c in list(Category)[:-1]]
    return np.select(conditions, codes, default=int(Category.other)).astype(np.int8)


def categorize(stats: TurnStats) -> Category:
    """The category of one turn (the batch rules applied to a batch of one)."""
    code = classify(
        np.array([stats.ol]), np.array([stats.nov]), np.array([stats.r]), np.array([stats.obs_chars])
    )[0]
    return Category(int(code))


def keep_draw(seed: int, trajectory_id: str, turn_idx: int) -> float:
    """The per-turn number in [0, 1) compared with the category's keep rate."""
    return unit_hash(seed, "loss-keep", trajectory_id, turn_idx)


def keep_draws(seed: int, keys: Iterable[tuple[str, int]]) -> np.ndarray:
    """:func:`keep_draw` of many (trajectory id, turn index) keys at once.

    The same blake2b digest as :func:`~agentworld.seeding.unit_hash`; the shared key
    prefix is formatted once and the digests become floats in one numpy call (a uint64
    to float64 conversion rounds like Python's int / 2**64 division).
    """
    prefix = f"{seed}\x1floss-keep\x1f"
    digest = hashlib.blake2b
    raw = b"".join([digest(f"{prefix}{tid}\x1f{idx}".encode(), digest_size=8).digest() for tid, idx in keys])
    return np.frombuffer(raw, dtype=">u8").astype(np.float64) / 2.0**64


def keep_turn(seed: int, trajectory_id: str, turn_idx: int, category: Category) -> bool:
    """Whether a turn's tokens stay in the loss (turn_idx is 1-based)."""
    return keep_draw(seed, trajectory_id, turn_idx) < KEEP_RATE[category]


@dataclass
class MaskBatch:
    """Column arrays for a batch of turns, in input order."""

    ol: np.ndarray
    nov: np.ndarray
    jac: np.ndarray
    r: np.ndarray
    action_chars: np.ndarray
    obs_chars: np.ndarray
    category: np.ndarray
    keep: np.ndarray

    def __len__(self) -> int:
        return len(self.category)

    @staticmethod
    def concat(parts: Sequence[MaskBatch]) -> MaskBatch:
        if not parts:
            return _compute([], 0)
        names = MaskBatch.__dataclass_fields__
        return MaskBatch(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in names})


TurnKey = tuple[str, int, str, str]
"""(trajectory id, 1-based turn index, action, observation)."""


def _batch(na: np.ndarray, no: np.ndarray, inter: np.ndarray, ac: np.ndarray, oc: np.ndarray, draws: np.ndarray) -> MaskBatch:
    """Ratios, categories and keep decisions from the per-turn set sizes and lengths."""
    ol = np.where(na > 0, inter / np.maximum(na, 1), 0.0)
    nov = np.where(no > 0, (no - inter) / np.maximum(no, 1), 0.0)
    union = na + no - inter
    jac = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
    r = oc / np.maximum(ac, 1)
    category = classify(ol, nov, r, oc)
    keep = draws < _KEEP_ARRAY[category]
    return MaskBatch(ol, nov, jac, r, ac, oc, category, keep)


def _compute(items: Sequence[TurnKey], seed: int) -> MaskBatch:
    n = len(items)
    if n == 0:
        return reference_batch(items, seed)
    tids, idxs, actions, observations = zip(*items, strict=True)  # columns, transposed in C
    na, no, inter = set_sizes(actions, observations)
    ac = np.fromiter(map(len, actions), dtype=np.int64, count=n)
    oc = np.fromiter(map(len, observations), dtype=np.int64, count=n)
    return _batch(na, no, inter, ac, oc, keep_draws(seed, zip(tids, idxs, strict=True)))


def reference_batch(items: Sequence[TurnKey], seed: int) -> MaskBatch:
    """:func:`turn_stats` and :func:`keep_draw` turn by turn: the definition the batch
    code is checked against (tests, benchmarks/masking_speed.py); slow."""
    n = len(items)
    na, no, inter, ac, oc = (np.empty(n, dtype=np.int64) for _ in range(5))
    draws = np.empty(n, dtype=np.float64)
    for i, (tid, idx, action, obs) in enumerate(items):
        a, o = words(action), words(obs)
        na[i], no[i], inter[i] = len(a), len(o), len(a & o)
        ac[i], oc[i] = len(action), len(obs)
        draws[i] = keep_draw(seed, tid, idx)
    return _batch(na, no, inter, ac, oc, draws)


def _chunks(items: Iterable[TurnKey], size: int) -> Iterator[list[TurnKey]]:
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def resolve_workers(workers: int | None) -> int:
    """``None`` or 0 means every core this process may use."""
    if workers and workers > 0:
        return workers
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def mask_turns(
    items: Iterable[TurnKey],
    *,
    seed: int = 0,
    workers: int | None = 1,
    chunk_size: int = 20_000,
    on_chunk: Callable[[int], None] | None = None,
    total: int | None = None,
    mapper: OrderedMap | None = None,
) -> MaskBatch:
    """Statistics, categories and keep decisions for many turns, in input order.

    ``workers`` > 1 spreads chunks over processes (0/None: all cores); results do not
    depend on the worker count. ``on_chunk(n)`` is called after each chunk of n turns.
    A known ``total`` of at most one chunk runs in-process (no pool start-up cost).
    ``mapper`` (e.g. Ray Data, :mod:`agentworld.executors.data`) runs the chunks instead.
    """
    parts: list[MaskBatch] = []
    if mapper is not None:
        for part in mapper(functools.partial(_compute, seed=seed), _chunks(items, chunk_size)):
            parts.append(part)
            if on_chunk:
                on_chunk(len(part))
        return MaskBatch.concat(parts)
    n_workers = 1 if total is not None and total <= chunk_size else resolve_workers(workers)
    if n_workers == 1:
        for chunk in _chunks(items, chunk_size):
            parts.append(_compute(chunk, seed))
            if on_chunk:
                on_chunk(len(chunk))
        return MaskBatch.concat(parts)
    # Bounded in-flight window: input is streamed, never held whole in memory.
    with ProcessPoolExecutor(max_workers=n_workers) as pool:
        pending: deque[Future[MaskBatch]] = deque()
        for chunk in _chunks(items, chunk_size):
            pending.append(pool.submit(_compute, chunk, seed))
            if len(pending) >= 2 * n_workers:
                _collect(pending.popleft(), parts, on_chunk)
        while pending:
            _collect(pending.popleft(), parts, on_chunk)
    return MaskBatch.concat(parts)


def _collect(fut: Future[MaskBatch], parts: list[MaskBatch], on_chunk: Callable[[int], None] | None) -> None:
    part = fut.result()
    parts.append(part)
    if on_chunk:
        on_chunk(len(part))


def trajectory_turn_keys(trajectories: Iterable) -> Iterator[TurnKey]:
    """Flatten trajectories into (id, 1-based turn index, action, observation) items;
    the actions bare: a presented turn's header, labels and fence are no words of its
    action (they would raise its overlap with nothing and its length ratio)."""
    for traj in trajectories:
        for i, turn in enumerate(traj.turns, start=1):
            yield traj.id, i, action_of(turn.action), turn.observation
