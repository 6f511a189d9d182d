"""The embedded model on its two engines, side by side in one run: transformers (``smol,engine=hf``)
and llama.cpp (``smol,engine=llamacpp``, the shipped adapter merged into a GGUF).

Prints, for each engine (and each llama.cpp weight type asked for):

- generation tokens/s (generated tokens over wall time, all requests together) at 1, 4 and
  16 concurrent requests on terminal prompts read afresh (llama.cpp's prefix cache off);
- the same on simulator sessions: 1, 4 and 16 recorded terminal sessions at once, each
  playing its turns in order, so every prompt extends the one before; llama.cpp with and
  without its prefix cache, and the share of prompt tokens it took from the cache;
- prompt-processing tokens/s (prompt tokens over the time to the first token) on long mcp
  and swe prompts, one at a time;
- fidelity: greedy outputs of each llama.cpp build against transformers on benchmark prompts
  from ``benchmarks/local`` (exact matches, and the mean share of the common token prefix),
  plus whether the prompt token ids are identical;
- drafting: simulated terminal sessions played turn by turn (one session at a time, prefix
  cache on, answers forced into the observation block as the runner asks for them) with
  plain and prompt-lookup drafted decoding side by side, each step on both (two backends,
  so neither reads the other's cache, and load hits both alike): p50 and p90 seconds a
  step, decode tokens/s (tokens over the time in decode steps), the share of drafted
  tokens accepted, and whether every greedy answer was identical.

    python benchmarks/embedded_speed.py                 # full run
    python benchmarks/embedded_speed.py --quick         # fewer tokens, concurrency 1 and 4
    python benchmarks/embedded_speed.py --types f16,q8_0 --fidelity 10
    python benchmarks/embedded_speed.py --draft-only    # the drafting figure alone, in minutes
    python benchmarks/embedded_speed.py --draft-only --draft 4,8 --sessions 4 --turns 6

Load from other processes slows every figure: compare engines within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from agentworld.models import Backend, GenerationConfig, load_backend
from agentworld.models.contract import OBSERVATION_BLOCK
from agentworld.models.llamacpp import LlamaCppBackend
from agentworld.models.smol import adapter_hash, converted_checkpoint, merged_gguf, packaged_adapter
from agentworld.prompts import sample_messages
from agentworld.records.bench import BenchSample, load_bench_dir

BENCH = Path(__file__).parent / "local"


def samples(domain: str) -> list[BenchSample]:
    return load_bench_dir(BENCH, domains=[domain]).samples


async def generation(backend: Backend, prompts: list[list[dict]], clients: int, max_tokens: int) -> float:
    """Generated tokens/s with ``clients`` requests in flight at once (one request each)."""
    config = GenerationConfig(max_tokens=max_tokens)
    start = time.perf_counter()
    rows = await asyncio.gather(*(backend.complete(p, config) for p in prompts[:clients]))
    wall = time.perf_counter() - start
    return sum(c.completion_tokens or 0 for row in rows for c in row) / wall


async def prompt_speed(backend: Backend, prompts: list[list[dict]]) -> tuple[float, int]:
    """Prompt tokens/s to the first token, one long prompt at a time; and the mean length."""
    tokens, wall = 0, 0.0
    for p in prompts:
        start = time.perf_counter()
        [c] = await backend.complete(p, GenerationConfig(max_tokens=1))
        wall += time.perf_counter() - start
        tokens += c.prompt_tokens or 0
    return tokens / wall, tokens // max(len(prompts), 1)


def session_prompts(count: int, turns: int) -> list[list[list[dict]]]:
    """``count`` recorded terminal sessions, each as its first ``turns`` prompts in order."""
    by_trajectory: dict[str, list[BenchSample]] = {}
    for s in samples("terminal"):
        by_trajectory.setdefault(s.trajectory_id, []).append(s)
    runs = [sorted(v, key=lambda s: s.turn_idx)[:turns] for v in by_trajectory.values() if len(v) >= turns]
    return [[sample_messages(s) for s in run] for run in runs[:count]]


async def sessions(backend: Backend, runs: list[list[list[dict]]], max_tokens: int) -> float:
    """Generated tokens/s with every session in flight at once, each one turn after another."""
    config = GenerationConfig(max_tokens=max_tokens)

    async def play(run: list[list[dict]]) -> int:
        return sum([(await backend.complete(p, config))[0].completion_tokens or 0 for p in run])

    start = time.perf_counter()
    done = await asyncio.gather(*(play(r) for r in runs))
    return sum(done) / (time.perf_counter() - start)


def fidelity_prompts(count: int, tokenize, limit: int) -> list[list[dict]]:
    """``count`` benchmark prompts, taken in turn from each domain, of at most ``limit`` tokens."""
    pools = [[sample_messages(s) for s in samples(d)[::7]] for d in ("terminal", "mcp", "search", "swe")]
    out: list[list[dict]] = []
    while len(out) < count and any(pools):
        for pool in pools:
            while pool and len(out) < count:
                m = pool.pop(0)
                if len(tokenize(m)) <= limit:
                    out.append(m)
                    break
    return out


async def session_table(engines: dict[str, Backend], runs: list[list[list[dict]]], levels: tuple[int, ...],
                        max_tokens: int) -> None:
    """Print sessions tokens/s per engine and level; llama.cpp with and without its prefix cache."""
    print(f"\nsessions: generated tokens/s, {len(runs[0])} turns a session, {max_tokens} new tokens a turn, "
          "sessions in flight at once")
    print(f"{'engine':<22}" + "".join(f"{f'{c} sessions':>14}" for c in levels) + "   prompt tokens from cache")
    for name, backend in engines.items():
        for cached in ((True, False) if isinstance(backend, LlamaCppBackend) else (False,)):
            before = (backend.read_tokens, backend.reused_tokens) if cached else (0, 0)
            figures = []
            for c in levels:
                cache(backend, cached)
                figures.append(await sessions(backend, runs[:c], max_tokens))
            share = ""
            if cached:
                read, reused = backend.read_tokens - before[0], backend.reused_tokens - before[1]
                share = f"   {100 * reused / max(read + reused, 1):.0f}%"
            label = f"{name}{' +cache' if cached else ''}"
            print(f"{label:<22}" + "".join(f"{f:>14.1f}" for f in figures) + share, flush=True)


async def drafting(path: Path, tokenizer: Path, runs: list[list[list[dict]]], drafts: list[int],
                   max_tokens: int) -> None:
    """Print step latency and decode speed of plain (draft=0) and drafted decoding, each
    session step played on every backend in turn."""
    backends = {k: LlamaCppBackend(path, max_batch=1, tokenizer=tokenizer, draft=k) for k in [0, *drafts]}
    config = GenerationConfig(max_tokens=max_tokens)
    steps: dict[int, list[float]] = {k: [] for k in backends}
    texts: dict[int, list[str]] = {k: [] for k in backends}
    for b in backends.values():  # warm-up, then nothing cached
        await b.complete_block(runs[0][0], GenerationConfig(max_tokens=4), OBSERVATION_BLOCK)
        b.forget_prefixes()
        b.step_seconds, b.step_tokens = 0.0, 0
    for run in runs:
        for messages in run:
            for k, b in backends.items():
                start = time.perf_counter()
                [c] = await b.complete_block(messages, config, OBSERVATION_BLOCK)
                steps[k].append(time.perf_counter() - start)
                texts[k].append(c.text)
    print(f"\ndrafting: {len(runs)} terminal sessions x {len(runs[0])} turns played one at a time, prefix cache on, "
          f"up to {max_tokens} new tokens a step (answer block forced)")
    print(f"{'decoding':<14}{'p50 s/step':>12}{'p90 s/step':>12}{'decode tok/s':>14}{'accepted':>16}  greedy identical")
    for k, b in backends.items():
        lat = sorted(steps[k])
        p50, p90 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(0.9 * len(lat)))]
        accepted = f"{b.accepted_tokens}/{b.drafted_tokens} {100 * b.accepted_tokens / max(b.drafted_tokens, 1):.0f}%"
        same = sum(a == r for a, r in zip(texts[k], texts[0], strict=True))
        label = "plain" if k == 0 else f"draft={k}"
        print(f"{label:<14}{p50:>12.2f}{p90:>12.2f}{b.step_tokens / max(b.step_seconds, 1e-9):>14.1f}"
              f"{accepted if k else '-':>16}  {same}/{len(texts[0])}", flush=True)
    for b in backends.values():
        await b.aclose()


def load_note() -> str:
    """The 1-minute load average against the cores: the machine is shared."""
    import os

    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def cache(backend: Backend, on: bool) -> None:
    """Turn llama.cpp's prefix cache on or off and forget what it holds, so a run starts
    cold (the sessions of one run replay those of the run before)."""
    if isinstance(backend, LlamaCppBackend):
        backend.prefix_cache = on
        backend.forget_prefixes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--types", default="f16,q8_0", help="llama.cpp weight types to build and measure")
    ap.add_argument("--fidelity", type=int, default=10, help="benchmark prompts compared greedily (0: skip)")
    ap.add_argument("--no-hf", action="store_true", help="llama.cpp only (transformers is slow)")
    ap.add_argument("--draft-only", action="store_true", help="only the plain vs drafted session figure (f16)")
    ap.add_argument("--draft", default="8", help="draft lengths compared with plain decoding")
    ap.add_argument("--sessions", type=int, default=None, help="terminal sessions in the drafting figure")
    ap.add_argument("--turns", type=int, default=None, help="turns a session in the drafting figure")
    args = ap.parse_args()
    drafts = [int(k) for k in args.draft.split(",") if int(k) > 0]
    tokenizer = converted_checkpoint() / "tokenizer.json"  # as the smol engine does
    draft_runs = session_prompts(args.sessions or (2 if args.quick or args.draft_only else 4),
                                 args.turns or (3 if args.quick or args.draft_only else 6))
    draft_tokens = 96 if args.quick or args.draft_only else 160
    if args.draft_only:
        print(f"adapter: {packaged_adapter() or 'none'}; {load_note()}")
        asyncio.run(drafting(merged_gguf(packaged_adapter(), outtype="f16"), tokenizer, draft_runs, drafts, draft_tokens))
        print(f"after: {load_note()}")
        return
    max_tokens = 32 if args.quick else 64
    levels = (1, 4) if args.quick else (1, 4, 16)
    terminal = [sample_messages(s) for s in samples("terminal")[: max(levels)]]
    turns = 3 if args.quick else 5
    runs = session_prompts(max(levels), turns)
    long_prompts = [sample_messages(s) for d in ("mcp", "swe") for s in samples(d)[:1 if args.quick else 3]]

    adapter = packaged_adapter()
    print(f"adapter: {adapter or 'none'} ({adapter_hash(adapter)}); {load_note()}")
    engines: dict[str, Backend] = {}
    for kind in args.types.split(","):
        start = time.perf_counter()
        path = merged_gguf(adapter, outtype=kind)
        engines[f"llamacpp-{kind}"] = LlamaCppBackend(path, max_batch=max(levels), tokenizer=tokenizer)
        print(f"llamacpp-{kind}: {path.name} {path.stat().st_size / 1e6:.0f} MB, ready in {time.perf_counter() - start:.1f}s")
    if not args.no_hf:
        start = time.perf_counter()
        engines["hf"] = load_backend("smol", engine="hf", max_batch=max(levels))
        print(f"hf: ready in {time.perf_counter() - start:.1f}s ({engines['hf']!r})")

    async def run() -> None:
        print(f"\ngeneration tokens/s ({max_tokens} new tokens a request, terminal prompts)")
        print(f"{'engine':<16}" + "".join(f"{f'{c} concurrent':>16}" for c in levels))
        for name, backend in engines.items():
            cache(backend, False)
            await generation(backend, terminal, 1, 4)  # warm-up
            figures = [await generation(backend, terminal, c, max_tokens) for c in levels]
            print(f"{name:<16}" + "".join(f"{f:>16.1f}" for f in figures), flush=True)
        await session_table(engines, runs, levels, max_tokens)
        for backend in engines.values():
            cache(backend, False)
        print("\nprompt processing tokens/s (long mcp/swe prompts, one at a time)")
        for name, backend in engines.items():
            speed, mean = await prompt_speed(backend, long_prompts)
            print(f"{name:<16}{speed:>10.0f} tok/s   (mean prompt {mean} tokens)", flush=True)
        if args.fidelity and "hf" in engines:
            await fidelity(engines, args.fidelity, max_tokens)
        if drafts:
            await drafting(merged_gguf(adapter, outtype="f16"), tokenizer, draft_runs, drafts, draft_tokens)
        print(f"\n{load_note()}")

    async def fidelity(engines: dict[str, Backend], count: int, max_tokens: int) -> None:
        hf = engines["hf"].engine  # type: ignore[attr-defined]
        prompts = fidelity_prompts(count, lambda m: hf.tokenizer(hf.prompt_text(m), add_special_tokens=False)["input_ids"], 1500)
        config = GenerationConfig(max_tokens=max_tokens)
        ref = [hf.generate_once(p, config)[0] for p in prompts]
        ref_ids = [hf.tokenizer(r.text, add_special_tokens=False)["input_ids"] for r in ref]
        print(f"\nfidelity: greedy, {max_tokens} tokens, {len(prompts)} benchmark prompts, against transformers fp32")
        for name, backend in engines.items():
            if not isinstance(backend, LlamaCppBackend):
                continue
            same_prompt = all(backend.tokenize(backend.prompt_text(p)) == hf.tokenizer(hf.prompt_text(p), add_special_tokens=False)["input_ids"]
                              for p in prompts)
            outs = await asyncio.gather(*(backend.complete(p, config) for p in prompts))
            exact, shares = 0, []
            for (out,), want, want_ids in zip(outs, ref, ref_ids, strict=True):
                exact += out.text == want.text
                got = hf.tokenizer(out.text, add_special_tokens=False)["input_ids"]
                common = next((i for i, (a, b) in enumerate(zip(got, want_ids, strict=False)) if a != b), min(len(got), len(want_ids)))
                shares.append(common / max(len(want_ids), len(got), 1))
            print(f"{name:<16}exact {exact}/{len(prompts)}, mean common prefix {100 * sum(shares) / len(shares):.0f}%, "
                  f"prompt tokens identical: {same_prompt}")

    asyncio.run(run())


if __name__ == "__main__":
    main()
