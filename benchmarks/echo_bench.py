"""Generated benchmark samples for the throughput scripts (a helper module, not a benchmark).

Terminal echo sessions of five turns each, every turn evaluated: cheap to make, and the
retrieval backend can answer them from the trajectories written next to them.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.records.bench import write_bench_dir
from agentworld.records.select import trajectories_to_samples
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories


def echo_bench(tmp: Path, n: int) -> tuple[Path, Path]:
    """``n`` samples in ``tmp/bench<n>`` and their trajectories in ``tmp/trajs<n>.jsonl``."""
    prompt = "root@sandbox:/workspace#"
    trajs = []
    for i in range((n + 4) // 5):
        turns = [
            Turn(action=json.dumps([{"keystrokes": f"echo w{i}x{k}\n", "duration": 0.5}]),
                 observation=f"{prompt} echo w{i}x{k}\nw{i}x{k}\n{prompt} ")
            for k in range(1, 6)
        ]
        trajs.append(Trajectory(id=f"t{i}", domain="terminal", task_description="echo words", turns=turns))
    write_trajectories(tmp / f"trajs{n}.jsonl", trajs)
    write_bench_dir(tmp / f"bench{n}", list(trajectories_to_samples(trajs, policy="all"))[:n])
    return tmp / f"bench{n}", tmp / f"trajs{n}.jsonl"
