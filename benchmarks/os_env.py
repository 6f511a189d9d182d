"""Desktop (os) environment speed: session start, step latency, episodes per minute.

Runs scripted episodes of the os task templates in real sandboxed desktop sessions
(Xvfb, D-Bus, AT-SPI, openbox, mousepad/galculator) and prints:
- reset time (sandbox + X server + buses + applications up and the first tree read);
- step latency (median and p90 over every step), split into the action program's own
  run (a fresh python3 with pyautogui) and the rest (settling: reading the tree until
  two looks agree);
- episodes per minute with one worker and with ``--workers`` workers.

    python benchmarks/os_env.py --episodes 6 --workers 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentworld.envs.collect import EpisodeJob, run_collection
from agentworld.envs.os import TEMPLATES, DesktopEnv
from agentworld.envs.os.drivers import run_scripted


def p90(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.9 * len(xs)) - 1)]


def collect(episodes: int, workers: int, seed0: int, resets: list[float]) -> tuple[float, list]:
    names = TEMPLATES.names()
    trajs = []

    def run_one(job: EpisodeJob):
        with DesktopEnv() as env:
            reset = env.reset

            def timed_reset(**kw):  # noqa: ANN003, ANN202 - times the reset the driver makes
                t0 = time.monotonic()
                res = reset(**kw)
                resets.append(time.monotonic() - t0)
                return res

            env.reset = timed_reset  # type: ignore[method-assign]
            task = TEMPLATES.get(job.task).instance(job.seed)
            traj = run_scripted(env, task, seed=job.seed, trajectory_id=job.job_id)
        trajs.append(traj)
        return traj

    jobs = [EpisodeJob(f"bench-{seed0 + i}", seed0 + i, "train", task=names[(seed0 + i) % len(names)])
            for i in range(episodes)]
    with tempfile.TemporaryDirectory() as d:
        report = run_collection(jobs, run_one, out=Path(d) / "t.jsonl", workers=workers, show_progress=False)
    if report.failed:
        print(f"  ({report.failed} episodes failed: {report.failures[:2]})")
    return report.episodes_per_minute, trajs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    resets: list[float] = []
    one, trajs = collect(args.episodes, 1, 0, resets)
    many, more = collect(args.episodes, args.workers, 1000, [])
    steps = [t.metadata.get("duration_s") or t.duration_s or 0.0 for tr in trajs for t in tr.turns]
    runs = [t.metadata.get("run_s", 0.0) for tr in trajs for t in tr.turns]
    print(f"episodes: {args.episodes} per run, {sum(len(t.turns) for t in trajs)} recorded steps (1 worker)")
    print(f"reset (session up, first tree): median {statistics.median(resets):.2f} s, p90 {p90(resets):.2f} s")
    print(f"step latency: median {statistics.median(steps):.2f} s, p90 {p90(steps):.2f} s")
    print(f"  action program run: median {statistics.median(runs):.2f} s; settling and tree reads: "
          f"median {statistics.median(steps) - statistics.median(runs):.2f} s")
    print(f"episodes per minute: {one:.1f} with 1 worker, {many:.1f} with {args.workers} workers "
          f"(x{many / one if one else 0:.2f})")


if __name__ == "__main__":
    main()
