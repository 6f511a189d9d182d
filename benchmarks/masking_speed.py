"""Turn-level loss masking throughput: one process vs all cores, measured in one run.

Turns come from recorded trajectories (the examples plus benchmarks/local/trajectories
when present), repeated under fresh trajectory ids up to --turns so the seeded keep
draws differ. Prints turns/second for each worker count and the speed-up.

    python benchmarks/masking_speed.py --turns 1000000
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from pathlib import Path

from agentworld.data.masking import mask_turns, resolve_workers
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


def measure(items: list, workers: int, chunk_size: int) -> float:
    start = time.perf_counter()
    batch = mask_turns(items, seed=0, workers=workers, chunk_size=chunk_size)
    elapsed = time.perf_counter() - start
    assert len(batch) == len(items)
    return len(items) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--chunk-size", type=int, default=20_000)
    args = ap.parse_args()
    items = turn_source(args.turns)
    chars = sum(len(a) + len(o) for _, _, a, o in items) / len(items)
    cores = resolve_workers(0)
    load = os.getloadavg()[0]
    print(f"{len(items):,} turns, {chars:.0f} chars per turn on average, {cores} cores, load average {load:.1f}")
    one = measure(items, 1, args.chunk_size)
    many = measure(items, cores, args.chunk_size)
    print(f"{'workers':>8} {'turns/s':>12} {'1M turns':>10}")
    print(f"{1:>8} {one:>12,.0f} {1e6 / one:>9.1f}s")
    print(f"{cores:>8} {many:>12,.0f} {1e6 / many:>9.1f}s")
    print(f"speed-up with {cores} workers: {many / one:.2f}x (bounded by the load average on shared machines)")


if __name__ == "__main__":
    main()
