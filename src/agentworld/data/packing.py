"""Packing tokenized samples into fixed-length rows without crossing sample boundaries.

Best-fit decreasing: samples, longest first, go into the row whose free space fits them
most tightly. A sample never spans two rows; within a row, ``position_ids`` restart at 0
for each sample and ``seq_lengths`` lists the sample lengths, which is what
padding-free / varlen attention (TRL's collator, flash attention) needs to keep
attention inside each sample. ``labels`` are the input ids with -100 outside the loss.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

IGNORE_INDEX = -100


@dataclass
class PackItem:
    sample_id: str
    input_ids: list[int]
    loss_mask: list[int]

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class PackedRow:
    input_ids: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    position_ids: list[int] = field(default_factory=list)
    seq_lengths: list[int] = field(default_factory=list)
    sample_ids: list[str] = field(default_factory=list)

    def add(self, item: PackItem) -> None:
        self.input_ids.extend(item.input_ids)
        self.labels.extend(t if m else IGNORE_INDEX for t, m in zip(item.input_ids, item.loss_mask, strict=True))
        self.position_ids.extend(range(len(item)))
        self.seq_lengths.append(len(item))
        self.sample_ids.append(item.sample_id)

    def to_record(self) -> dict:
        return {
            "input_ids": self.input_ids,
            "labels": self.labels,
            "position_ids": self.position_ids,
            "seq_lengths": self.seq_lengths,
            "sample_ids": self.sample_ids,
        }


def truncate(item: PackItem, max_length: int) -> tuple[PackItem, bool]:
    """Cut a sample to ``max_length`` tokens; an answer cut in the middle leaves the loss
    (a model must not learn to stop mid-observation). Returns the item and whether it was cut."""
    if len(item) <= max_length:
        return item, False
    mask = item.loss_mask[:max_length]
    if item.loss_mask[max_length]:
        i = max_length
        while i > 0 and mask[i - 1]:
            i -= 1
        mask = mask[:i] + [0] * (max_length - i)
    return PackItem(item.sample_id, item.input_ids[:max_length], mask), True


def pack(items: Sequence[PackItem], max_length: int) -> list[PackedRow]:
    """Best-fit decreasing packing; every item must already fit in ``max_length``.

    Ties are broken by sample id, so the same samples always give the same rows.
    """
    order = sorted(range(len(items)), key=lambda i: (-len(items[i]), items[i].sample_id))
    rows: list[PackedRow] = []
    # Sorted (free space, row index) pairs: bisect finds the tightest row that fits.
    free: list[tuple[int, int]] = []
    for i in order:
        item = items[i]
        n = len(item)
        if n > max_length:
            raise ValueError(f"sample {item.sample_id} has {n} tokens > max_length {max_length}; truncate first")
        pos = bisect.bisect_left(free, (n, -1))
        if pos < len(free):
            space, r = free.pop(pos)
        else:
            rows.append(PackedRow())
            space, r = max_length, len(rows) - 1
        rows[r].add(item)
        if space - n > 0:
            bisect.insort(free, (space - n, r))
    return rows


def unpacked(items: Sequence[PackItem]) -> list[PackedRow]:
    """One row per sample (no packing), in input order."""
    rows = []
    for item in items:
        row = PackedRow()
        row.add(item)
        rows.append(row)
    return rows
