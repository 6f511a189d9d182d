"""Order-independent seeded randomness: decisions keyed by a seed and a stable name.

A hash of (seed, key) decides, so the same item gets the same decision whatever
else is in the run and in whatever order items arrive (parallel workers, resumes).
"""

from __future__ import annotations

import hashlib
import random


def unit_hash(seed: int, *key: object) -> float:
    """A number in [0, 1) fixed by ``seed`` and ``key``."""
    text = "\x1f".join([str(seed), *map(str, key)])
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def keyed_rng(seed: int, *key: object) -> random.Random:
    return random.Random(int(unit_hash(seed, *key) * 2**53))
