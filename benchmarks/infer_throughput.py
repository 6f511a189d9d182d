"""Infer throughput of the bench runner at concurrency 1, 4 and 16 on one local endpoint.

Starts ``agentworld serve`` once (the retrieval backend by default, or ``--backend smol``
for the embedded model, whose server batches concurrent requests), then runs
``run_infer`` over the same samples at each concurrency through the ``openai`` backend,
each into a fresh output file with no cache, and prints samples/s side by side with the
speed-up over concurrency 1. Samples come from ``--bench`` or are generated (terminal
echo sessions, every turn evaluated).

    python benchmarks/infer_throughput.py                 # retrieval, 400 samples
    python benchmarks/infer_throughput.py --backend smol --samples 24 --max-tokens 64
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from echo_bench import echo_bench

from agentworld.bench.infer import run_infer
from agentworld.launch import launched
from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.records.bench import load_bench_dir

LEVELS = (1, 4, 16)


async def measure(url: str, samples, out: Path, concurrency: int, max_tokens: int) -> tuple[float, int]:
    wm = WorldModel(load_backend("openai", model="wm", base_url=url), concurrency=concurrency)
    start = time.perf_counter()
    res = await run_infer(wm, samples, out, config=GenerationConfig(max_tokens=max_tokens, temperature=0.0))
    elapsed = time.perf_counter() - start
    await wm.aclose()
    return elapsed, res.failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="retrieval", choices=["retrieval", "smol"])
    ap.add_argument("--bench", type=Path, help="benchmark directory (default: generated samples)")
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        bench, source = (args.bench, args.bench) if args.bench else echo_bench(tmp, args.samples)
        samples = load_bench_dir(bench).samples[: args.samples]
        serve_args = ["--backend", f"retrieval:{source}" if args.backend == "retrieval" else args.backend]
        with launched("serve", *serve_args, timeout=900) as base:
            url = f"{base}/v1"
            # One untimed warm-up request so model loading and first-call costs are not measured.
            asyncio.run(measure(url, samples[:1], tmp / "warmup.jsonl", 1, args.max_tokens))
            rows = []
            for c in LEVELS:
                elapsed, failures = asyncio.run(measure(url, samples, tmp / f"c{c}.jsonl", c, args.max_tokens))
                rows.append((c, elapsed, len(samples) / elapsed, failures))
    base = rows[0][2]
    print(f"backend={args.backend} samples={len(samples)} max_tokens={args.max_tokens}")
    print(f"{'concurrency':>11} {'seconds':>9} {'samples/s':>10} {'speed-up':>9} {'failures':>9}")
    for c, elapsed, rate, failures in rows:
        print(f"{c:>11} {elapsed:>9.2f} {rate:>10.2f} {rate / base:>8.2f}x {failures:>9}")


if __name__ == "__main__":
    main()
