"""Scaling out on Ray against the local executor, in one run: collection, inference, the
CPT data build and loss masking, each with the local executor and with Ray at 1 and 2 workers.

A local Ray cluster is started on 127.0.0.1 with --cpus CPUs (its start-up is printed
apart, not counted). Collection records scripted search episodes on a small corpus built
here; inference runs a tiny random hf checkpoint (built here) on the shortest benchmarks/local samples;
the data build is the CPT builder over recorded trajectories with that checkpoint's
tokenizer (the Ray output is checked byte for byte against the local one); masking is
:func:`agentworld.data.masking.mask_turns` on recorded turns, in-process vs Ray Data
chunks. Figures are wall-clock throughputs on this machine; the load average is printed
because on a shared machine it bounds what a second worker can add.

    python benchmarks/scale_out.py                # minutes: the model and Ray start-ups dominate
    python benchmarks/scale_out.py --episodes 8 --samples 8 --turns 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "local"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from masking_speed import turn_source  # noqa: E402 - the same recorded turns as masking_speed.py

from agentworld.executors import ExecutorConfig  # noqa: E402

Row = tuple[str, str, float, str]
"""(stage, executor, throughput, unit)."""


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def executors() -> list[tuple[str, ExecutorConfig | None]]:
    return [("local", None), ("ray, 1 worker", ExecutorConfig(kind="ray", workers=1)),
            ("ray, 2 workers", ExecutorConfig(kind="ray", workers=2))]


def bench_collect(work: Path, episodes: int) -> list[Row]:
    from agentworld.envs.collect import EpisodeJob, run_collection
    from agentworld.envs.mcp.episode import run_scripted
    from agentworld.envs.search import CorpusConfig, SearchEngine, SearchEnv, build_corpus, make_task

    corpus = work / "corpus"
    build_corpus(corpus, CorpusConfig(max_pages=40))
    engine = SearchEngine(corpus)

    def run_one(job: EpisodeJob):
        return run_scripted(SearchEnv(engine=engine), make_task(engine, job.seed), trajectory_id=job.job_id,
                            seed=job.seed, environment="search/offline")

    rows = []
    for i, (name, executor) in enumerate(executors()):
        jobs = [EpisodeJob(f"e{k}", seed=k) for k in range(episodes)]
        rep = run_collection(jobs, run_one, out=work / f"collect{i}.jsonl", workers=2, executor=executor,
                             show_progress=False)
        assert rep.done == episodes, rep.failures
        rows.append(("collect (search episodes)", f"{name}" + (" (2 threads)" if executor is None else ""),
                     rep.episodes_per_minute, "episodes/min"))
    return rows


def bench_infer(work: Path, tiny: Path, n_samples: int) -> list[Row]:
    from agentworld.bench.infer import run_infer, select_samples
    from agentworld.executors.actors import ActorBackend
    from agentworld.models import GenerationConfig, WorldModel, load_backend
    from agentworld.models.spec import parse_backend_spec
    from agentworld.prompts import sample_messages
    from agentworld.records.bench import load_bench_dir

    # The shortest prompts: the tiny model's 512-token vocabulary makes long prompts very
    # long in tokens, and attention on them would measure the CPU, not the executor.
    pool = select_samples(load_bench_dir(BENCH).samples)
    samples = sorted(pool, key=lambda s: sum(len(m["content"]) for m in sample_messages(s)))[:n_samples]
    config = GenerationConfig(max_tokens=16)
    rows = []
    for i, (name, executor) in enumerate(executors()):
        if executor is None:
            backend = load_backend("hf", path=tiny)
        else:
            backend = ActorBackend.start(parse_backend_spec(f"hf:{tiny}"), executor)  # model load not timed
        concurrency = 4 * (executor.workers if executor else 1)

        async def go(backend=backend, concurrency=concurrency, i=i):
            async with WorldModel(backend, concurrency=concurrency) as wm:
                return await run_infer(wm, samples, work / f"infer{i}.jsonl", config=config)

        wall = timed(lambda go=go: asyncio.run(go()))
        rows.append(("infer (tiny hf model)", name, len(samples) / wall, "samples/s"))
    return rows


def bench_data(work: Path, tiny: Path, per_domain: int) -> list[Row]:
    from agentworld.data.builds import build_dataset, load_build_config
    from agentworld.records.trajectory import read_trajectories, write_trajectories

    shards = work / "shards"
    shards.mkdir()
    n = 0
    for f in sorted((BENCH / "trajectories").glob("*.jsonl")):
        if not f.name.endswith(".failures.jsonl"):
            items = read_trajectories(f).items[:per_domain]
            write_trajectories(shards / f.name, items)
            n += len(items)
    rows, datasets = [], []
    for i, (name, executor) in enumerate(executors()):
        out = work / f"cpt{i}"
        config = load_build_config("cpt", None, {"inputs": [str(shards)], "output_dir": str(out), "tokenizer": str(tiny),
                                                 "exclude_bench": [str(BENCH)], "max_length": 32768, "workers": 2})
        wall = timed(lambda config=config, executor=executor: build_dataset("cpt", config, executor=executor))
        datasets.append((out / "train.parquet").read_bytes())
        rows.append(("data build (CPT)", name + (" (2 procs)" if executor is None else ""), n / wall, "trajectories/s"))
    same = all(d == datasets[0] for d in datasets)
    rows.append(("data build (CPT)", "same dataset bytes on every executor", float(same), "yes=1"))
    return rows


def bench_masking(n_turns: int) -> list[Row]:
    import ray

    from agentworld.data.masking import mask_turns
    from agentworld.executors.data import ray_map

    items = turn_source(n_turns)
    mask_turns(items[:2000], seed=0, workers=1)  # the kernel's one-time start-up, not timed
    rows = []
    for name, executor in executors():
        mapper = ray_map(ray, executor) if executor else None
        wall = timed(lambda mapper=mapper: mask_turns(items, seed=0, workers=1, chunk_size=20_000, mapper=mapper))
        rows.append(("masking", name + (" (1 proc)" if executor is None else ""), len(items) / wall, "turns/s"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=12)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--per-domain", type=int, default=20, help="Trajectories per domain in the data build.")
    ap.add_argument("--turns", type=int, default=200_000)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster.")
    args = ap.parse_args()
    import ray

    from agentworld.models.tiny import build_tiny_checkpoint

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    print(f"Ray {ray.__version__}: local cluster with {args.cpus} CPUs started in {time.perf_counter() - start:.1f}s (not counted)")
    try:
        with tempfile.TemporaryDirectory(prefix="aw-scale-") as tmp:
            work = Path(tmp)
            tiny = build_tiny_checkpoint(work / "tiny")
            rows = [*bench_collect(work, args.episodes), *bench_infer(work, tiny, args.samples),
                    *bench_data(work, tiny, args.per_domain), *bench_masking(args.turns)]
    finally:
        ray.shutdown()
    print(f"\n{'stage':<28} {'executor':<40} {'throughput':>12}  unit")
    for stage, name, value, unit in rows:
        shown = ("yes" if value else "NO") if unit == "yes=1" else f"{value:,.1f}"
        print(f"{stage:<28} {name:<40} {shown:>12}  {'' if unit == 'yes=1' else unit}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
