"""Sizes of per-turn word sets for a whole batch of turns, without a Python object per word.

For every turn, the sizes of A (the action's word set), O (the observation's) and A∩O,
where a word set is :func:`agentworld.data.masking.words`: the distinct ``\\w+`` runs of
the lowercased text. Building a Python set per turn makes a string object per word,
which bounded the old code to about 25k turns/s per core; here a batch of turns is one
buffer of character codes with a word-character flag per character.

With numba installed, :func:`_count_words` (compiled once, cached on disk) reads each
word, hashes it as it goes and counts distinct words per turn in a table stamped with
the turn number: one pass, no per-turn Python. Without numba, :func:`_count_numpy` does
the same in numpy: words are runs of word characters, each is hashed from its 8-byte
chunks (all chunks of all words at once), and distinct (turn, word, side) keys are
counted after one sort.

Two words are taken as equal when their 64-bit hashes are (the numpy path keeps the
bits left beside the turn number and the side, 51 for a batch of 2048 turns); within one turn of a
few hundred words the chance of a false match is below 1e-10.

Turns whose action and observation are both ASCII (most) take a bytes path: one
``bytes.translate`` lowercases and blanks every non-word byte. The others are lowercased
per text (``str.lower`` may change the length, and the final-sigma rule looks at
neighbours, so the texts are not lowercased joined) and read as UTF-16 code units (or
UTF-32 with astral characters), with the word class of each character from a table the
regex engine itself fills once (astral characters: asked per batch).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_WORD_CHAR = re.compile(r"\w")
_ASCII_WORD = np.array([bool(_WORD_CHAR.match(chr(c))) for c in range(128)], dtype=bool)
# Word bytes map to their lowercase, every other byte to 0 (non-ASCII bytes never occur).
_ASCII_TABLE = bytes(ord(chr(c).lower()) if c < 128 and _ASCII_WORD[c] else 0 for c in range(256))

_K0 = np.uint64(0x9E3779B97F4A7C15)
_K1 = np.uint64(0xBF58476D1CE4E5B9)
_K2 = np.uint64(0x94D049BB133111EB)
_TAIL_MASK = np.array([(1 << (8 * k)) - 1 if k < 8 else (1 << 64) - 1 for k in range(9)], dtype=np.uint64)


BATCH_TURNS = 2048
"""Turns counted together: larger batches fall out of the CPU caches and run slower."""


COMPILED_MIN_TURNS = 10_000
"""Calls with fewer turns use numpy: loading numba and its cached kernel takes a second
or two per process, more than numpy spends on a few thousand turns."""


def set_sizes(actions: Sequence[str], observations: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|A|, |O| and |A∩O| of every turn (int64 arrays, input order)."""
    kernel = _compiled_kernel() if len(actions) >= COMPILED_MIN_TURNS else None
    parts = [_set_sizes(actions[i : i + BATCH_TURNS], observations[i : i + BATCH_TURNS], kernel)
             for i in range(0, len(actions), BATCH_TURNS)]
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(3))  # type: ignore[return-value]
    return tuple(np.concatenate(cols) for cols in zip(*parts, strict=True))  # type: ignore[return-value]


def _set_sizes(
    actions: Sequence[str], observations: Sequence[str], kernel: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(actions)
    na, no, inter = (np.zeros(n, dtype=np.int64) for _ in range(3))
    if n == 0:
        return na, no, inter
    is_ascii = np.fromiter(map(str.isascii, actions), dtype=bool, count=n)
    is_ascii &= np.fromiter(map(str.isascii, observations), dtype=bool, count=n)
    for flag, path in ((True, _ascii_words), (False, _unicode_words)):
        rows = np.flatnonzero(is_ascii == flag)
        if len(rows) == 0:
            continue
        if len(rows) == n:
            acts, obs = list(actions), list(observations)
        else:
            pick = operator.itemgetter(*rows.tolist())
            acts, obs = (list(pick(actions)), list(pick(observations))) if len(rows) > 1 else (
                [actions[rows[0]]], [observations[rows[0]]])
        segments: list[str] = [""] * (2 * len(rows))
        segments[0::2], segments[1::2] = acts, obs  # turn k: segments 2k (action), 2k+1
        buf, is_word, unit, seg_starts = path(segments)
        if kernel is not None:
            codes = np.frombuffer(buf, dtype={1: np.uint8, 2: np.uint16, 4: np.uint32}[unit])
            ends = np.append(seg_starts[1:] - 1, len(codes))
            a, o, i = kernel(codes, is_word, seg_starts, ends, len(rows))
        else:
            a, o, i = _count_numpy(buf, is_word, unit, seg_starts, len(rows))
        na[rows], no[rows], inter[rows] = a, o, i
    return na, no, inter


def _lengths(texts: list[str]) -> np.ndarray:
    return np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


def _layout(lengths: np.ndarray) -> np.ndarray:
    """Start of each segment in a text joined with one separator character."""
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    return starts


def _ascii_words(segments: list[str]) -> tuple[bytes, np.ndarray, int, np.ndarray]:
    buf = " ".join(segments).encode("ascii").translate(_ASCII_TABLE)
    is_word = np.frombuffer(buf, dtype=np.uint8).astype(bool)
    return buf, is_word, 1, _layout(_lengths(segments))


def _unicode_words(segments: list[str]) -> tuple[bytes, np.ndarray, int, np.ndarray]:
    lowered = list(map(str.lower, segments))
    buf = " ".join(lowered).encode("utf-32-le")
    cps = np.frombuffer(buf, dtype=np.uint32)
    table = _bmp_word_table()
    if len(cps) == 0 or cps.max() < len(table):
        is_word = table[cps]
        # Two bytes per character hash in half the chunks of four (words compare only
        # within a turn, and both texts of a turn take the same path).
        return cps.astype(np.uint16).tobytes(), is_word, 2, _layout(_lengths(lowered))
    else:
        astral = cps >= len(table)
        is_word = table[np.where(astral, 0, cps)]
        distinct = np.unique(cps[astral])
        word_class = np.array([chr(c).isalnum() for c in distinct.tolist()], dtype=bool)
        is_word[astral] = word_class[np.searchsorted(distinct, cps[astral])]
    return buf, is_word, 4, _layout(_lengths(lowered))


@functools.cache
def _bmp_word_table() -> np.ndarray:
    """Whether each Basic Multilingual Plane character is a word character, asked of the
    regex engine itself (one pass over all 65,536 characters)."""
    table = np.zeros(0x10000, dtype=bool)
    every = "".join(map(chr, range(0x10000)))
    table[np.fromiter(map(ord, re.findall(r"\w", every)), dtype=np.int64)] = True
    return table


@functools.cache
def _compiled_kernel():  # type: ignore[no-untyped-def]
    """:func:`_count_words` compiled by numba (cached on disk), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True, nogil=True)(_count_words)


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def _count_words(codes, is_word, starts, ends, turns):  # type: ignore[no-untyped-def]
    """|A|, |O|, |A∩O| per turn in one pass over the characters (compiled by numba).

    Each word is hashed (FNV-1a, then a 64-bit finaliser) as it is read and put in an
    open-addressing table whose slots are stamped with the turn number, so the table
    is never cleared between turns. It has at least twice as many slots as a turn has
    characters, hence more than twice as many as its words.
    """
    na = np.zeros(turns, dtype=np.int64)
    no = np.zeros(turns, dtype=np.int64)
    inter = np.zeros(turns, dtype=np.int64)
    longest = 0
    for t in range(turns):
        longest = max(longest, ends[2 * t + 1] - starts[2 * t])
    cap = 16
    while cap < 2 * longest + 2:
        cap *= 2
    mask = np.uint64(cap - 1)
    keys = np.zeros(cap, dtype=np.uint64)
    stamp = np.full(cap, -1, dtype=np.int64)
    seen = np.zeros(cap, dtype=np.uint8)  # bit 0: in the action, bit 1: in the observation
    for t in range(turns):
        for side in range(2):
            i, end = starts[2 * t + side], ends[2 * t + side]
            while i < end:
                if not is_word[i]:
                    i += 1
                    continue
                h = _FNV_OFFSET
                while i < end and is_word[i]:
                    h = (h ^ np.uint64(codes[i])) * _FNV_PRIME
                    i += 1
                h = (h ^ (h >> np.uint64(33))) * np.uint64(0xFF51AFD7ED558CCD)
                h ^= h >> np.uint64(33)
                j = h & mask
                while stamp[j] == t and keys[j] != h:
                    j = (j + np.uint64(1)) & mask
                if stamp[j] != t:
                    stamp[j], keys[j], seen[j] = t, h, 1 << side
                    if side == 0:
                        na[t] += 1
                    else:
                        no[t] += 1
                elif side == 1 and not seen[j] & 2:
                    seen[j] |= 2
                    no[t] += 1
                    if seen[j] & 1:
                        inter[t] += 1
    return na, no, inter


def _count_numpy(
    buf: bytes, is_word: np.ndarray, unit: int, seg_starts: np.ndarray, turns: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = len(is_word)
    change = np.empty(m + 1, dtype=bool)  # word starts and ends, alternating
    if m:
        change[0], change[m] = is_word[0], is_word[m - 1]
        np.not_equal(is_word[1:], is_word[:-1], out=change[1:m])
    else:
        change[0] = False
    edges = np.flatnonzero(change)
    starts, ends = edges[0::2], edges[1::2]
    # Segments are few and sorted: find each one's first word, then spread its number.
    first_word = np.searchsorted(starts, seg_starts)
    seg = np.repeat(np.arange(len(seg_starts), dtype=np.uint64), np.diff(first_word, append=len(starts)))
    hashes = _hash_spans(buf, starts * unit, (ends - starts) * unit)
    turn_bits = max(turns.bit_length(), 1)
    turn = seg >> np.uint64(1)
    side = seg & np.uint64(1)  # 0: action, 1: observation
    key = (turn << np.uint64(64 - turn_bits)) | ((hashes >> np.uint64(turn_bits + 1)) << np.uint64(1)) | side
    key.sort()
    # After sorting, equal (turn, word) keys are adjacent with the action's copy first.
    word_key = key >> np.uint64(1)
    first = np.ones(len(key), dtype=bool)
    first[1:] = word_key[1:] != word_key[:-1]
    last = np.ones(len(key), dtype=bool)
    last[:-1] = first[1:]
    in_a = (key[first] & np.uint64(1)) == 0
    in_o = (key[last] & np.uint64(1)) == 1
    group_turn = (key[first] >> np.uint64(64 - turn_bits)).astype(np.int64)
    na = np.bincount(group_turn[in_a], minlength=turns)
    no = np.bincount(group_turn[in_o], minlength=turns)
    inter = np.bincount(group_turn[in_a & in_o], minlength=turns)
    return na.astype(np.int64), no.astype(np.int64), inter.astype(np.int64)


def _hash_spans(buf: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every byte span ``buf[start:start + length]`` (length >= 1).

    Every span is cut into 8-byte chunks, all chunks of all spans are mixed at once
    with their position in the span, and a span's hash mixes the sum of its chunks'
    with its length: no loop over the longest word.
    """
    # Aligned little-endian words; an unaligned 8-byte window is two of them shifted
    # (fancy indexing through a 1-byte-stride view would be several times slower).
    words = np.frombuffer(buf + bytes(16 - len(buf) % 8), dtype="<u8")

    def chunk(at: np.ndarray, index: np.ndarray, left: np.ndarray) -> np.ndarray:
        word, shift = at >> 3, (at & 7).astype(np.uint64) << np.uint64(3)
        # A shift by 64 is undefined: the high word is shifted in two steps instead.
        window = (words[word] >> shift) | ((words[word + 1] << np.uint64(1)) << (np.uint64(63) - shift))
        return _mix(index * _K0 + _K2, window & _TAIL_MASK[np.minimum(left, 8)])

    total = chunk(starts, np.zeros(len(starts), dtype=np.uint64), lengths)
    # Most words fit one chunk; the further chunks of the others go in one flat batch.
    longer = np.flatnonzero(lengths > 8)
    if len(longer):
        more = (lengths[longer] - 1) >> 3
        first = np.zeros(len(more), dtype=np.int64)
        np.cumsum(more[:-1], out=first[1:])
        span = np.repeat(np.arange(len(more)), more)
        index = np.arange(len(span)) - first[span] + 1
        offset = 8 * index
        mixed = chunk(starts[longer][span] + offset, index.astype(np.uint64), lengths[longer][span] - offset)
        total[longer] += np.add.reduceat(mixed, first)
    return _mix(lengths.astype(np.uint64) * _K0, total)


def _mix(h: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    x = (h ^ chunk) * _K1
    return (x ^ (x >> np.uint64(31))) * _K2
