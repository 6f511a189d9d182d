"""Dynamic batching of concurrent requests for local models.

Requests that arrive while the model is busy (or within a short window of each other)
are grouped by their generation settings and run as one batch in a worker thread, so
16 concurrent clients cost about one batched ``generate`` instead of 16 sequential
ones. One batch runs at a time: the model is a single shared resource.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class _Pending(Generic[Item]):
    key: Hashable
    item: Item
    size: int
    future: asyncio.Future


class Batcher(Generic[Item, Result]):
    """Group awaiting callers into batches for ``run_batch(key, items) -> results``.

    ``size`` of an item is the number of rows it adds (``n`` samples of one prompt);
    a batch holds at most ``max_rows`` rows, but a single item larger than that still
    runs (alone). A ``solo`` item always runs alone.
    """

    def __init__(
        self,
        run_batch: Callable[[Hashable, Sequence[Item]], list[Result]],
        *,
        max_rows: int = 16,
        window_s: float = 0.005,
    ):
        self._run_batch = run_batch
        self.max_rows = max_rows
        self.window_s = window_s
        self._queues: dict[Hashable, list[_Pending[Item]]] = {}
        self._solo = 0
        self._drainer: asyncio.Task | None = None
        self.batches = 0
        self.rows = 0
        self.peak_rows = 0

    async def submit(self, key: Hashable, item: Item, size: int = 1, *, solo: bool = False) -> Result:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        queue_key: Hashable = key
        if solo:
            self._solo += 1
            queue_key = ("solo", self._solo)
        self._queues.setdefault(queue_key, []).append(_Pending(key, item, size, fut))
        if self._drainer is None or self._drainer.done() or self._drainer.get_loop() is not loop:
            self._drainer = loop.create_task(self._drain())
        return await fut

    def _take(self) -> tuple[Hashable, list[_Pending[Item]]]:
        # Oldest group first, so a steady stream of one setting cannot starve another.
        key = next(iter(self._queues))
        queue = self._queues[key]
        batch, rows = [], 0
        while queue and (not batch or rows + queue[0].size <= self.max_rows):
            p = queue.pop(0)
            batch.append(p)
            rows += p.size
        if not queue:
            del self._queues[key]
        return batch[0].key, batch

    async def _drain(self) -> None:
        await asyncio.sleep(self.window_s)  # let requests that arrive together batch together
        while self._queues:
            key, batch = self._take()
            batch = [p for p in batch if not p.future.cancelled()]
            if not batch:
                continue
            rows = sum(p.size for p in batch)
            self.batches += 1
            self.rows += rows
            self.peak_rows = max(self.peak_rows, rows)
            try:
                results: list[Any] = await asyncio.to_thread(self._run_batch, key, [p.item for p in batch])
            except Exception as exc:  # the whole batch failed: every caller gets the error
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            for p, r in zip(batch, results, strict=True):
                if not p.future.done():
                    p.future.set_result(r)
