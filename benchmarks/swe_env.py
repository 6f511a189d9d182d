"""SWE environment speed: reset cost, step latency per tool, episodes per minute.

Runs scripted repair episodes on real repositories in real sandboxes and prints:
- reset time with bug injection (each candidate costs one test-suite run) next to a
  bug-free reset (sandbox + sdist unpack + git only), and their ratio;
- step latency per tool command (median and p90 over every recorded step);
- episodes per minute with one worker and with ``--workers`` workers, and the speed-up.

    python benchmarks/swe_env.py --episodes 4 --workers 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agentworld.envs.collect import EpisodeJob, run_collection
from agentworld.envs.swe import SweEnv
from agentworld.envs.swe.scripted import scripted_repair
from agentworld.envs.swe.tools import parse_action


def p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.9 * len(xs)) - 1)]


def tool_label(action: str) -> str:
    name, args = parse_action(action)
    if name == "bash":
        return "bash: pytest" if "pytest" in args["command"] or "reproduce" in args["command"] else "bash: other"
    return f"editor: {args.get('command')}"


def collect(episodes: int, workers: int, seed0: int) -> tuple[float, list]:
    trajs = []

    def run_one(job: EpisodeJob):
        env = SweEnv()
        try:
            traj = scripted_repair(env, seed=job.seed, trajectory_id=job.job_id)
        finally:
            env.close()
        trajs.append(traj)
        return traj

    jobs = [EpisodeJob(f"bench-{seed0 + i}", seed0 + i, "train") for i in range(episodes)]
    with tempfile.TemporaryDirectory() as d:
        report = run_collection(jobs, run_one, out=Path(d) / "t.jsonl", workers=workers, show_progress=False)
    if report.failed:
        print(f"  ({report.failed} episodes failed: {report.failures[:2]})")
    return report.episodes_per_minute, trajs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=500)
    args = ap.parse_args()

    env = SweEnv()
    bug_t, clean_t = [], []
    try:
        for i in range(args.episodes):
            t0 = time.perf_counter()
            env.reset(seed=args.seed + i)
            bug_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            env.reset(seed=args.seed + i, options={"bug": False})
            clean_t.append(time.perf_counter() - t0)
    finally:
        env.close()
    print(f"reset with bug injection: median {statistics.median(bug_t):.2f}s  "
          f"bug-free: {statistics.median(clean_t):.2f}s  ratio {statistics.median(bug_t) / statistics.median(clean_t):.1f}x")

    epm1, trajs = collect(args.episodes, 1, args.seed)
    epmn, more = collect(args.episodes, args.workers, args.seed + 1000)
    per_tool: dict[str, list[float]] = defaultdict(list)
    for traj in trajs + more:
        for turn in traj.turns:
            per_tool[tool_label(turn.action)].append(1000 * (turn.duration_s or 0.0))
    print(f"step latency over {sum(map(len, per_tool.values()))} steps (ms):")
    for label, xs in sorted(per_tool.items()):
        print(f"  {label:<22} n={len(xs):<4} median {statistics.median(xs):8.1f}  p90 {p90(xs):8.1f}")
    print(f"episodes/min: 1 worker {epm1:.1f}  {args.workers} workers {epmn:.1f}  speed-up {epmn / epm1:.2f}x")


if __name__ == "__main__":
    main()
