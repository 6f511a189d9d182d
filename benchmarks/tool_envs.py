"""Step latency and episode throughput of the real MCP and search environments.

Runs scripted episodes sequentially (one core's worth of work) and prints, per MCP task
template and per search tool: steps, median and p90 step latency, and episodes per
minute including server start-up; plus raw search-engine query latency.

    python benchmarks/tool_envs.py                      # full corpus from the user cache
    python benchmarks/tool_envs.py --small --episodes 2 # builds a small corpus first
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agentworld.envs.mcp import TEMPLATES as MCP_TEMPLATES
from agentworld.envs.mcp import McpEnv, make_task, run_scripted
from agentworld.envs.search import TEMPLATES as SEARCH_TEMPLATES
from agentworld.envs.search import CorpusConfig, SearchEngine, SearchEnv, build_corpus, corpus_ready, default_corpus_dir
from agentworld.envs.search import make_task as make_search_task


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _row(name: str, steps: list[float], episodes: int | None = None, wall: float = 0.0) -> str:
    rate = f"{60 * episodes / wall:>10.1f}" if episodes else f"{'-':>10}"
    return (f"{name:<22} {len(steps):>6} {1000 * statistics.median(steps):>10.2f} {1000 * _pct(steps, 0.9):>10.2f} "
            f"{rate}")


HEADER = f"{'':<22} {'steps':>6} {'p50 ms':>10} {'p90 ms':>10} {'ep/min':>10}"


def bench_mcp(episodes: int) -> None:
    print("\nMCP (real servers in bubblewrap; ep/min includes server start-up)")
    print(HEADER)
    all_steps: list[float] = []
    total_wall = 0.0
    with McpEnv() as env:
        for template in MCP_TEMPLATES:
            steps: list[float] = []
            t0 = time.perf_counter()
            for seed in range(episodes):
                traj = run_scripted(env, make_task(seed, template), trajectory_id=f"b{seed}", seed=seed)
                steps += [t.duration_s or 0.0 for t in traj.turns]
            wall = time.perf_counter() - t0
            total_wall += wall
            all_steps += steps
            print(_row(template, steps, episodes, wall))
    print(_row("mcp (all)", all_steps, episodes * len(MCP_TEMPLATES), total_wall))


def bench_search(corpus: Path, episodes: int) -> None:
    engine = SearchEngine(corpus)
    print(f"\nsearch ({engine.manifest['pages']:,} pages, {engine.manifest['passages']:,} passages)")
    per_tool: dict[str, list[float]] = defaultdict(list)
    env = SearchEnv(engine=engine)
    n = 0
    t0 = time.perf_counter()
    for template in SEARCH_TEMPLATES:
        for seed in range(episodes):
            traj = run_scripted(env, make_search_task(engine, seed, template), trajectory_id=f"b{seed}", seed=seed)
            for t in traj.turns:
                per_tool[json.loads(t.action)["name"]].append(t.duration_s or 0.0)
            n += 1
    wall = time.perf_counter() - t0
    print(HEADER)
    for tool, steps in sorted(per_tool.items()):
        print(_row(tool, steps))
    print(_row("search (all)", [x for v in per_tool.values() for x in v], n, wall))
    queries = [p.title for s in engine.sources() for p in engine.sample_pages(s, 50, range(0, 10**6, 997))]
    lat = []
    for q in queries:
        t = time.perf_counter()
        engine.search(q, 5)
        lat.append(time.perf_counter() - t)
    print(f"engine query latency over {len(lat)} title queries: p50 {1000 * statistics.median(lat):.2f} ms, "
          f"p90 {1000 * _pct(lat, 0.9):.2f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=3, help="episodes per template")
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--small", action="store_true", help="build and use a small corpus (60 pages per source)")
    ap.add_argument("--skip-mcp", action="store_true")
    args = ap.parse_args()
    corpus = args.corpus or default_corpus_dir()
    if args.small:
        corpus = Path(tempfile.mkdtemp(prefix="aw-bench-corpus-")) / "small"
        t = time.perf_counter()
        m = build_corpus(corpus, CorpusConfig(max_pages=60))
        print(f"built a small corpus: {m['passages']:,} passages in {time.perf_counter() - t:.1f} s")
    elif not corpus_ready(corpus):
        raise SystemExit(f"no corpus at {corpus}: run `agentworld collect search` once, or pass --small")
    if not args.skip_mcp:
        bench_mcp(args.episodes)
    bench_search(corpus, args.episodes)


if __name__ == "__main__":
    main()
