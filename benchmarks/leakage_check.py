"""Time the leakage check of `data build` on the recorded local trajectories.

Prints how long shingling and comparing take for train vs everything held out (the
recorded test side plus the local benchmark's evaluated turns).

    PYTHONPATH=src python3 benchmarks/leakage_check.py
"""

from __future__ import annotations

import time
from pathlib import Path

from agentworld.data.source import load_inputs
from agentworld.data.split import bench_trajectories, check_leakage

ROOT = Path(__file__).parents[1]


def main() -> None:
    trajs, _ = load_inputs([str(ROOT / "benchmarks/local/trajectories")])
    t0 = time.perf_counter()
    bench = bench_trajectories([ROOT / "benchmarks/local"])
    t1 = time.perf_counter()
    train = [t for t in trajs if t.provenance.split != "test" and t.id not in bench]
    held = [t for t in trajs if t not in train] + list(bench.values())
    report = check_leakage(train, held)
    t2 = time.perf_counter()
    print(f"trajectories: {len(train)} train, {len(held)} held out ({len(bench)} rebuilt from benchmark samples)")
    print(f"loading benchmark samples: {t1 - t0:.2f} s")
    print(f"check_leakage: {t2 - t1:.2f} s, {len(report.near_duplicates)} near-duplicate pair(s)")


if __name__ == "__main__":
    main()
