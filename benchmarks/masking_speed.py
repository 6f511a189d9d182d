"""Turn-level loss masking throughput: the per-turn definition (the old code path) vs
the batch code (numba kernel, numpy without numba) on one process and on all cores,
measured in one run.

Turns come from recorded trajectories (the examples plus benchmarks/local/trajectories
when present), repeated under fresh trajectory ids up to --turns so the seeded keep
draws differ. Prints turns/second by wall clock and by this process's CPU time (on a
shared, loaded machine the CPU figure is the per-core rate), checks that both paths
give the same statistics, categories and keep decisions, and prints the speed-ups.

    python benchmarks/masking_speed.py --turns 1000000
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agentworld.data import _wordsets
from agentworld.data.masking import MaskBatch, mask_turns, reference_batch, resolve_workers
from agentworld.data.source import load_inputs

ROOT = Path(__file__).resolve().parents[1]


def turn_source(turns: int) -> list[tuple[str, int, str, str]]:
    paths = [str(ROOT / "examples" / "trajectories.jsonl")]
    recorded = ROOT / "benchmarks" / "local" / "trajectories"
    if recorded.is_dir() and any(recorded.glob("*.jsonl")):
        paths.append(str(recorded))
    trajs, _ = load_inputs(paths)
    base = [(t.id, i, turn.action, turn.observation) for t in trajs for i, turn in enumerate(t.turns, 1)]
    out = []
    for copy in itertools.count():
        for tid, i, a, o in base:
            out.append((f"{tid}#{copy}", i, a, o))
            if len(out) >= turns:
                return out
    return out


def measure(run: Callable[[], MaskBatch], n: int) -> tuple[MaskBatch, float, float]:
    """The batch, turns/s by wall clock, turns/s by this process's CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    batch = run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert len(batch) == n
    return batch, n / wall, n / max(cpu, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--chunk-size", type=int, default=20_000)
    args = ap.parse_args()
    items = turn_source(args.turns)
    n = len(items)
    chars = sum(len(a) + len(o) for _, _, a, o in items) / n
    cores = resolve_workers(0)
    print(f"{n:,} turns, {chars:.0f} chars per turn on average, {cores} cores, load average {os.getloadavg()[0]:.1f}")
    # One-time costs (numba loading or compiling the kernel, the word-character table)
    # are paid before timing, once per process; printed apart.
    start = time.perf_counter()
    mask_turns(items[: _wordsets.COMPILED_MIN_TURNS], seed=0, workers=1)
    kernel = "numba kernel" if _wordsets._compiled_kernel() is not None else "numpy fallback (no numba)"
    print(f"batch code: {kernel}, start-up {time.perf_counter() - start:.2f}s (once per process)")
    old, old_wall, old_cpu = measure(lambda: reference_batch(items, 0), n)
    new, new_wall, new_cpu = measure(lambda: mask_turns(items, seed=0, workers=1, chunk_size=args.chunk_size), n)
    _, many_wall, _ = measure(lambda: mask_turns(items, seed=0, workers=cores, chunk_size=args.chunk_size), n)
    same = all(np.array_equal(getattr(old, f), getattr(new, f)) for f in MaskBatch.__dataclass_fields__)
    print(f"{'path':<24} {'turns/s wall':>13} {'turns/s CPU':>12} {'1M turns (wall)':>16}")
    print(f"{'per turn (old), 1 proc':<24} {old_wall:>13,.0f} {old_cpu:>12,.0f} {1e6 / old_wall:>15.1f}s")
    print(f"{'batch, 1 proc':<24} {new_wall:>13,.0f} {new_cpu:>12,.0f} {1e6 / new_wall:>15.1f}s")
    print(f"{f'batch, {cores} procs':<24} {many_wall:>13,.0f} {'':>12} {1e6 / many_wall:>15.1f}s")
    print(f"same statistics, categories and keep decisions: {'yes' if same else 'NO'}")
    print(f"speed-up of the batch code on one process: {new_wall / old_wall:.1f}x wall, {new_cpu / old_cpu:.1f}x CPU")
    print(f"speed-up with {cores} processes: {many_wall / new_wall:.2f}x (bounded by the load average on shared machines)")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
