"""Generation throughput of the embedded model, measured side by side in one run.

Prints tokens/s (generated tokens over wall time) for:

- the baseline: plain ``model.generate`` at batch 1 in fp32;
- the ``smol`` backend single-stream in each precision (fp32, bf16 weights, bf16 autocast);
- the ``smol`` backend with ``--batch`` concurrent requests (dynamic batching);
- ``agentworld serve --backend smol`` under 1, 4 and 16 concurrent OpenAI clients.

Every figure is also shown as a ratio to the baseline measured in the same run, which
is what to compare across machines (absolute numbers depend on what else runs).

    python benchmarks/backends_throughput.py            # full run
    python benchmarks/backends_throughput.py --quick    # fewer tokens and clients
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time

import httpx

from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.models.openai_api import OpenAIBackend
from agentworld.models.smol import converted_checkpoint
from agentworld.prompts import build_messages, build_system_prompt

HISTORY = [('[{"keystrokes": "pwd\\n", "duration": 1.0}]', "root@sandbox:/workspace# pwd\n/workspace\nroot@sandbox:/workspace#")]


def prompt(i: int) -> list[dict[str, str]]:
    action = f'[{{"keystrokes": "ls -la /srv/data{i}\\n", "duration": 1.0}}]'
    return build_messages(build_system_prompt("terminal"), HISTORY, action)


def baseline(max_tokens: int, repeats: int) -> float:
    """Plain transformers generate, batch 1, fp32, greedy: the figure to beat."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = converted_checkpoint()
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tokens, elapsed = 0, 0.0
    for i in range(repeats + 1):
        text = tok.apply_chat_template(prompt(i), add_generation_prompt=True, tokenize=False)
        enc = tok(text, return_tensors="pt", add_special_tokens=False)
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=max_tokens, do_sample=False)
        if i:  # the first call warms up
            elapsed += time.perf_counter() - start
            tokens += out.shape[1] - enc["input_ids"].shape[1]
    return tokens / elapsed


async def run_clients(wm: WorldModel, clients: int, rounds: int, config: GenerationConfig) -> float:
    """Aggregate tokens/s of ``clients`` concurrent callers, ``rounds`` requests each."""
    requests = [prompt(i) for i in range(clients * rounds)]
    await wm.predict(prompt(999), config)  # warm-up
    start = time.perf_counter()
    tokens = 0
    async for _, preds in wm.map(requests, config):
        if preds[0].error:
            raise RuntimeError(preds[0].error)
        tokens += sum(p.completion_tokens or 0 for p in preds)
    return tokens / (time.perf_counter() - start)


def single_stream(precision: str, max_tokens: int, repeats: int) -> float:
    backend = load_backend("smol", precision=precision)
    return asyncio.run(run_clients(WorldModel(backend, concurrency=1), 1, repeats, GenerationConfig(max_tokens=max_tokens)))


def batched(batch: int, max_tokens: int, rounds: int) -> float:
    backend = load_backend("smol", max_batch=batch)
    wm = WorldModel(backend, concurrency=batch)
    return asyncio.run(run_clients(wm, batch, rounds, GenerationConfig(max_tokens=max_tokens)))


def served(clients: list[int], max_tokens: int, rounds: int) -> dict[int, float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentworld", "serve", "--backend", "smol", "--port", str(port), "--served-model-name", "smol"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("agentworld serve did not start") from None
                time.sleep(0.5)
        out = {}
        for c in clients:
            wm = WorldModel(OpenAIBackend("smol", base_url=f"{url}/v1", timeout=600), concurrency=c)
            out[c] = asyncio.run(run_clients(wm, c, rounds, GenerationConfig(max_tokens=max_tokens)))
        stats = httpx.get(f"{url}/stats").json()
        print(f"  serve: {stats['batches']} batches, largest {stats['peak_batch_rows']} rows", file=sys.stderr)
        return out
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="timed single-stream calls per setting")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--precisions", default="fp32,bf16,autocast")
    ap.add_argument("--quick", action="store_true", help="32 tokens, 2 repeats, clients 1,4")
    args = ap.parse_args()
    if args.quick:
        args.max_tokens, args.repeats, args.clients = 32, 2, "1,4"
    converted_checkpoint()  # convert once up front so no timing includes it
    rows: list[tuple[str, float]] = []

    def record(name: str, value: float) -> None:
        rows.append((name, value))
        print(f"  {name}: {value:.1f} tok/s", file=sys.stderr)

    record("baseline generate, batch 1, fp32", baseline(args.max_tokens, args.repeats))
    for precision in args.precisions.split(","):
        record(f"smol single-stream, {precision}", single_stream(precision, args.max_tokens, args.repeats))
    record(f"smol batched, {args.batch} concurrent, auto", batched(args.batch, args.max_tokens, 1))
    for c, value in served([int(c) for c in args.clients.split(",")], args.max_tokens, 1).items():
        record(f"serve smol, {c} concurrent client{'s' if c > 1 else ''}", value)

    base = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"{'setting':<{width}}  {'tok/s':>8}  {'x baseline':>10}")
    for name, value in rows:
        print(f"{name:<{width}}  {value:8.1f}  {value / base:10.2f}")


if __name__ == "__main__":
    main()
