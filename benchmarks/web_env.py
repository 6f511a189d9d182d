"""How fast the web environment records: real Chromium on the loopback sites.

Prints, from one run on this machine:
- start-up: the sites (database build + three servers) and one browser;
- reset time (a fresh browser context and the first page);
- step latency p50 and p90 per kind of page (a Datasette table, a MiniWoB++ form, a
  mid-sized documentation page), for clicks, fills and navigations, and for an action on
  an unknown element id (it waits for the action timeout first);
- episodes per minute with 1 and 2 workers on the same scripted episodes (one browser per
  episode, one shared set of sites).

    python benchmarks/web_env.py [--reps 8] [--episodes 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentworld.envs.collect import EpisodeJob, run_collection
from agentworld.envs.web import Sites, WebEnv
from agentworld.envs.web.episode import run_scripted
from agentworld.envs.web.tasks import find, make_task

EPISODE_TEMPLATES = ["ds_filter_form", "ds_sort_columns", "mw_login_user", "tabs_compare", "err_bad_sql",
                     "docs_scroll_read"]
TABLE = "http://index.test/pydocs/objects"
DOC = "http://docs.test/library/fnmatch.html"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def _time(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def latency(sites: Sites, reps: int) -> None:
    with WebEnv(sites=sites) as env:
        resets = [_time(lambda: env.reset(options={"start_url": TABLE})) for _ in range(max(3, reps // 2))]
        print(f"reset (new context + first page): p50 {statistics.median(resets) * 1000:.0f} ms")
        cases: dict[str, list[float]] = {}

        def measure(name: str, start: dict[str, object], make_action: Callable[[str], str]) -> None:
            for i in range(reps):
                first = env.reset(seed=i, options=start).observation
                cases.setdefault(name, []).append(_time(lambda f=first: env.step(make_action(f))))

        measure("datasette: sort click", {"start_url": TABLE}, lambda o: f"click({find(o, 'link', 'name')!r})")
        measure("datasette: fill search", {"start_url": TABLE}, lambda o: f"fill({find(o, 'searchbox')!r}, 'json')")
        measure("datasette: goto", {"start_url": TABLE}, lambda o: f"goto('{TABLE}?_sort=kind')")
        measure("miniwob: fill", {"miniwob": "enter-text"}, lambda o: f"fill({find(o, 'textbox')!r}, 'abc')")
        measure("docs: scroll", {"start_url": DOC}, lambda o: "scroll(0, 600)")
        measure("docs: goto", {"start_url": DOC}, lambda o: "goto('http://docs.test/library/glob.html')")
        measure("unknown id (1 s timeout)", {"start_url": TABLE}, lambda o: "click('99999')")
    print(f"step latency ({reps} steps each)")
    for name, xs in cases.items():
        print(f"  {name:28} p50 {statistics.median(xs) * 1000:7.0f} ms   p90 {_pct(xs, 0.9) * 1000:7.0f} ms")


def throughput(sites: Sites, episodes: int) -> None:
    jobs = [EpisodeJob(f"bench-{i}", seed=i, task=EPISODE_TEMPLATES[i % len(EPISODE_TEMPLATES)]) for i in range(episodes)]

    def run_one(job: EpisodeJob):
        with WebEnv(sites=sites) as env:
            return run_scripted(env, make_task(job.seed, job.task), trajectory_id=job.job_id, seed=job.seed)

    with tempfile.TemporaryDirectory() as d:
        for workers in (1, 2):
            rep = run_collection(jobs, run_one, out=Path(d) / f"w{workers}.jsonl", workers=workers, show_progress=False)
            assert rep.failed == 0, rep.failures
            print(f"episodes per minute, {workers} worker(s): {rep.episodes_per_minute:.1f} "
                  f"({rep.done} episodes in {rep.elapsed_s:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--episodes", type=int, default=8)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with Sites() as sites:
        print(f"sites up (database {sites.stats['objects']} objects, 3 servers): {time.perf_counter() - t0:.1f} s")
        def first_page() -> None:
            with WebEnv(sites=sites) as env:
                env.reset(options={"start_url": TABLE})

        print(f"browser start + first page + close: {_time(first_page):.1f} s")
        latency(sites, args.reps)
        throughput(sites, args.episodes)


if __name__ == "__main__":
    main()
