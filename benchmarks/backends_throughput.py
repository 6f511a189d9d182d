"""Generation throughput of the embedded model, measured side by side in one run.

Prints tokens/s (generated tokens over wall time) for:

- the baseline: plain ``model.generate`` at batch 1 in fp32;
- the ``smol`` backend in each precision (fp32, bf16 weights, bf16 autocast), single-stream
  and with ``--batch`` concurrent requests (dynamic batching);
- ``agentworld serve --backend smol`` under 1, 4 and 16 concurrent OpenAI clients.

All settings, the served ones included, take turns in interleaved rounds and the best round of each is kept, so load
from other processes hits them alike. Every figure is also shown as a ratio to the
baseline measured in the same run: compare ratios across machines, not absolute numbers.

    python benchmarks/backends_throughput.py            # full run
    python benchmarks/backends_throughput.py --quick    # fewer tokens and clients
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import httpx

from agentworld.launch import launched
from agentworld.models import GenerationConfig, WorldModel, load_backend
from agentworld.models.openai_api import OpenAIBackend
from agentworld.models.smol import converted_checkpoint
from agentworld.prompts import build_messages, build_system_prompt

HISTORY = [('[{"keystrokes": "pwd\\n", "duration": 1.0}]', "root@sandbox:/workspace# pwd\n/workspace\nroot@sandbox:/workspace#")]


def prompt(i: int) -> list[dict[str, str]]:
    action = f'[{{"keystrokes": "ls -la /srv/data{i}\\n", "duration": 1.0}}]'
    return build_messages(build_system_prompt("terminal"), HISTORY, action)


class Baseline:
    """Plain transformers generate, batch 1, fp32, greedy: the figure to beat."""

    def __init__(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = converted_checkpoint()
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()

    def __call__(self, i: int, max_tokens: int) -> tuple[int, float]:
        text = self.tok.apply_chat_template(prompt(i), add_generation_prompt=True, tokenize=False)
        enc = self.tok(text, return_tensors="pt", add_special_tokens=False)
        start = time.perf_counter()
        with self.torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=max_tokens, do_sample=False)
        return out.shape[1] - enc["input_ids"].shape[1], time.perf_counter() - start


async def run_clients(wm: WorldModel, clients: int, rounds: int, config: GenerationConfig, offset: int = 0) -> tuple[int, float]:
    """Generated tokens and wall time of ``clients`` concurrent callers, ``rounds`` requests each."""
    requests = [prompt(offset + i) for i in range(clients * rounds)]
    start = time.perf_counter()
    tokens = 0
    async for _, preds in wm.map(requests, config):
        if preds[0].error:
            raise RuntimeError(preds[0].error)
        tokens += sum(p.completion_tokens or 0 for p in preds)
    return tokens, time.perf_counter() - start


Setting = Callable[[int], Awaitable[tuple[int, float]]]


async def interleaved(settings: dict, rounds: int) -> dict:
    """Best tokens/s of each setting over ``rounds`` rounds that take turns, so a burst of
    load from other processes hits every setting alike instead of whichever ran then."""
    for run in settings.values():
        await run(10_000)  # warm-up
    best = dict.fromkeys(settings, 0.0)
    for r in range(rounds):
        for name, run in settings.items():
            tokens, seconds = await run(r)
            best[name] = max(best[name], tokens / seconds)
    return best


@contextmanager
def smol_server() -> Iterator[str]:
    """``agentworld serve --backend smol`` on a free port, for the duration of the block."""
    with launched("serve", "--backend", "smol", "--served-model-name", "smol", timeout=600) as url:
        yield url
        stats = httpx.get(f"{url}/stats").json()
        print(f"  serve: {stats['batches']} batches, largest {stats['peak_batch_rows']} rows", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timed rounds per setting (best is kept)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--precisions", default="fp32,bf16,autocast")
    ap.add_argument("--quick", action="store_true", help="32 tokens, 2 rounds, batch 4, clients 1,4")
    args = ap.parse_args()
    if args.quick:
        args.max_tokens, args.rounds, args.batch, args.clients = 32, 2, 4, "1,4"
    converted_checkpoint()  # convert once up front so no timing includes it
    config = GenerationConfig(max_tokens=args.max_tokens)
    base = Baseline()

    async def run_base(i: int) -> tuple[int, float]:
        return base(i, args.max_tokens)

    settings: dict[str, Setting] = {"baseline generate, batch 1, fp32": run_base}
    for precision in args.precisions.split(","):
        wm = WorldModel(load_backend("smol", precision=precision, max_batch=args.batch), concurrency=args.batch)
        settings[f"smol single-stream, {precision}"] = lambda i, wm=wm: run_clients(wm, 1, 1, config, i)
        settings[f"smol {args.batch} concurrent (batched), {precision}"] = (
            lambda i, wm=wm: run_clients(wm, args.batch, 1, config, i * args.batch)
        )
    with smol_server() as url:
        for c in [int(c) for c in args.clients.split(",")]:
            wm = WorldModel(OpenAIBackend("smol", base_url=f"{url}/v1", timeout=600), concurrency=c)
            name = f"serve smol (auto precision), {c} concurrent client{'s' if c > 1 else ''}"
            settings[name] = lambda i, wm=wm, c=c: run_clients(wm, c, 1, config, i * c)
        # One event loop for every round: the HTTP clients' connections belong to it.
        results = asyncio.run(interleaved(settings, args.rounds))

    baseline = next(iter(results.values()))
    width = max(len(name) for name in results)
    print(f"{'setting':<{width}}  {'tok/s':>8}  {'x baseline':>10}")
    for name, value in results.items():
        print(f"{name:<{width}}  {value:8.1f}  {value / baseline:10.2f}")


if __name__ == "__main__":
    main()
