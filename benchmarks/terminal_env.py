"""How much the terminal environment adds on top of the commands it runs.

Prints, from one run on this machine, with the hardened sandbox (user namespace,
seccomp, tmux server inside the episode's cgroup):
- per-step overhead: a step's wall time minus the command's own run time (bash's
  ``time`` inside the sandbox), p50 and p90, for commands from instant to half a second;
- the cost of one sandboxed process (bwrap + cgroup + rlimits) next to a plain host one;
- episode reset time;
- episodes per minute with 1 and 2 workers on the same scripted episodes.

    python benchmarks/terminal_env.py [--reps 10] [--episodes 8]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentworld.envs.collect import EpisodeJob, run_collection
from agentworld.envs.sandbox import Sandbox, ensure_rootfs
from agentworld.envs.terminal import TEMPLATES, TerminalEnv, action_json
from agentworld.envs.terminal.drivers import run_scripted

COMMANDS = ["true", "ls -la /usr/bin | wc -l", "python3 -c 'print(1)'", "sleep 0.2", "sleep 0.5"]
EPISODE_TEMPLATES = ["count-words", "csv-sum", "git-first-commit", "chmod-script", "python-script", "tar-archive"]


def step_overhead(reps: int) -> None:
    print(f"per-step overhead ({reps} steps each)")
    print(f"  {'command':28} {'own run':>9} {'step':>9} {'ovh p50':>9} {'ovh p90':>9}")
    # One episode holds every measured step (the default episode ends after 100).
    with TerminalEnv(max_steps=len(COMMANDS) * reps + 1) as env:
        env.reset()
        env.step(action_json(("TIMEFORMAT=%R\n", 2)))
        for command in COMMANDS:
            own, wall = [], []
            for _ in range(reps):
                t0 = time.perf_counter()
                obs = env.step(action_json((f"time {command}\n", 10))).observation
                wall.append(time.perf_counter() - t0)
                own.append(float(re.findall(r"^(\d+\.\d+)$", obs, re.M)[-1]))
            over = sorted(w - o for w, o in zip(wall, own, strict=True))
            p50, p90 = statistics.median(over), over[min(len(over) - 1, round(0.9 * (len(over) - 1)))]
            print(f"  {command:28} {statistics.median(own) * 1000:8.1f}ms {statistics.median(wall) * 1000:8.1f}ms "
                  f"{p50 * 1000:8.1f}ms {p90 * 1000:8.1f}ms")


def process_cost(reps: int) -> None:
    with Sandbox() as sb:
        host = _median(lambda: subprocess.run(["true"], check=True), reps)
        boxed = _median(lambda: sb.run(["true"]), reps)
    print(f"one process: host {host * 1000:.1f} ms, sandboxed {boxed * 1000:.1f} ms ({boxed / host:.1f}x)")


def reset_time(reps: int) -> None:
    with TerminalEnv() as env:
        t = _median(lambda: env.reset(options={"task": TEMPLATES.get("git-conflict").instance(0)}), max(3, reps // 3))
    print(f"reset (fresh sandbox + files + setup + shell): {t * 1000:.0f} ms")


def throughput(episodes: int) -> None:
    jobs = [EpisodeJob(f"bench-{i}", seed=i, task=EPISODE_TEMPLATES[i % len(EPISODE_TEMPLATES)]) for i in range(episodes)]

    def run_one(job: EpisodeJob):
        with TerminalEnv() as env:
            return run_scripted(env, TEMPLATES.get(job.task).instance(job.seed), seed=job.seed,
                                trajectory_id=job.job_id)

    rates = {}
    with tempfile.TemporaryDirectory() as d:
        for workers in (1, 2):
            rep = run_collection(jobs, run_one, out=Path(d) / f"w{workers}.jsonl", workers=workers, show_progress=False)
            assert rep.failed == 0, rep.failures
            rates[workers] = rep.episodes_per_minute
            print(f"episodes per minute, {workers} worker(s): {rep.episodes_per_minute:.1f} "
                  f"({episodes} episodes in {rep.elapsed_s:.1f} s)")
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


def _median(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--episodes", type=int, default=8)
    args = ap.parse_args()
    ensure_rootfs()
    step_overhead(args.reps)
    process_cost(args.reps)
    reset_time(args.reps)
    throughput(args.episodes)


if __name__ == "__main__":
    main()
