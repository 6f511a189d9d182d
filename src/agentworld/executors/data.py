"""Ordered parallel maps for the data builders: worker processes here, or Ray Data on a cluster.

A builder hands its CPU-bound steps (loss-masking statistics, tokenizing) over as a
function and a stream of chunks; the map returns one result per chunk, in chunk order,
so what the builder writes does not depend on where or in which order chunks ran.
The Ray map makes each chunk a row of a Ray Data dataset (pickled, so any Python value
travels) and ``map_batches`` over it, then puts the results back in chunk order.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agentworld.executors.config import ExecutorConfig, cluster_slots

OrderedMap = Callable[[Callable[[Any], Any], Iterable[Any]], Iterator[Any]]
"""``map(fn, chunks)``: ``fn(chunk)`` for every chunk, yielded in chunk order."""


class _Apply:
    """The Ray Data UDF: unpickle each chunk, apply ``fn``, pickle the result."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        out = [pickle.dumps(self.fn(pickle.loads(blob)), protocol=pickle.HIGHEST_PROTOCOL) for blob in batch["chunk"]]
        return {"index": batch["index"], "result": out}


def ray_map(ray: Any, config: ExecutorConfig) -> OrderedMap:
    """An :data:`OrderedMap` over Ray Data on the connected cluster: ``workers`` (or one
    per CPU slot) chunks at a time, each reserving ``num_cpus``."""
    slots = cluster_slots(ray, config)[0]

    def run(fn: Callable[[Any], Any], chunks: Iterable[Any]) -> Iterator[Any]:
        rows = [{"index": i, "chunk": pickle.dumps(c, protocol=pickle.HIGHEST_PROTOCOL)} for i, c in enumerate(chunks)]
        if not rows:
            return iter(())
        # Quiet: the builder shows its own progress.
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        done = ds.map_batches(_Apply(fn), batch_size=1, num_cpus=config.num_cpus, concurrency=slots).take_all()
        done.sort(key=lambda r: r["index"])
        return (pickle.loads(r["result"]) for r in done)

    return run
