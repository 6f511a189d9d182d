"""Wall-clock time of `agentworld bench infer -c 16` against a sequential client loop.

Starts an OpenAI-compatible endpoint on 127.0.0.1 that answers every request after
200 ms -- by default a minimal Starlette app in a child process, standing in for a remote
server that costs this machine nothing but the wait; ``--server agentworld`` uses
``agentworld serve --delay 0.2`` with the retrieval backend instead, whose per-request
work then competes with the clients for this machine's cores. Then, in one run and for
each sample count, it times as real subprocesses, Python start-up included in both:

- **sequential**: the loop the published evaluation script runs, re-implemented from
  its documented behaviour -- for each record build the chat messages, make one blocking
  ``chat.completions.create`` call with the ``openai`` SDK, append the answer to a JSONL;
- **agentworld**: ``agentworld bench infer -b openai -c 16`` into a fresh file, CLI
  start-up, sample loading, parsing and the fsynced appends included.

It prints both times and their ratio. Rounds alternate the two (``--rounds``) and the
best of each is kept, so load from other processes hits them alike.

    python benchmarks/bench_throughput.py                  # 64 and 256 samples
    python benchmarks/bench_throughput.py --samples 64 --rounds 1 --server agentworld
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from echo_bench import echo_bench

from agentworld.launch import free_port, launched

# The sequential client: standalone on purpose (it stands for someone else's script),
# so it imports only the openai SDK and the standard library.
SEQUENTIAL = r"""
import json, sys
from pathlib import Path
from openai import OpenAI

bench, out, url = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
client = OpenAI(base_url=url, api_key="EMPTY")
for file in sorted(bench.glob("*_test.jsonl")):
    for line in file.read_text().splitlines():
        rec = json.loads(line)
        messages = [{"role": "system", "content": rec["system_str"]}]
        for prompt, response in zip(rec["prompt"][: rec["turn_idx"] - 1], rec["response"]):
            messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
        messages.append({"role": "user", "content": rec["current_prompt"]})
        reply = client.chat.completions.create(model="wm", messages=messages, temperature=0.6, max_tokens=32768)
        with out.open("a") as fh:
            fh.write(json.dumps({"id": rec["id"], "turn_idx": rec["turn_idx"], "prediction": reply.choices[0].message.content}) + "\n")
"""


# The stand-in endpoint, run with `python -c ENDPOINT PORT DELAY`.
ENDPOINT = r"""
import asyncio, sys, time
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

delay = float(sys.argv[2])
REPLY = "<predicted_observation>\nok\n</predicted_observation>"

async def chat(request):
    await request.body()
    await asyncio.sleep(delay)
    return JSONResponse({
        "id": "chatcmpl-0", "object": "chat.completion", "created": int(time.time()), "model": "wm",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    })

async def health(request):
    return JSONResponse({"status": "ok"})

app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/health", health)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=1024)
"""


@contextlib.contextmanager
def endpoint(kind: str, delay: float, source: Path) -> Iterator[str]:
    """The base URL (``.../v1``) of a local endpoint answering after ``delay`` seconds."""
    if kind == "agentworld":
        with launched("serve", "--backend", "retrieval:" + str(source), "--served-model-name", "wm",
                      "--delay", str(delay), timeout=300) as base:
            yield f"{base}/v1"
        return
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", ENDPOINT, str(port), str(delay)], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("the stand-in endpoint did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def timed(cmd: list[str], out: Path) -> float:
    out.unlink(missing_ok=True)
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])}... failed ({res.returncode}):\n{res.stderr[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--delay", type=float, default=0.2, help="seconds the endpoint holds every answer")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--server", choices=["tiny", "agentworld"], default="tiny")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        benches = {n: echo_bench(tmp, n) for n in args.samples}
        source = benches[max(args.samples)][1]
        with endpoint(args.server, args.delay, source) as url:
            rows = []
            for n in args.samples:
                bench = benches[n][0]
                seq_out, cli_out = tmp / f"seq{n}.jsonl", tmp / f"cli{n}.jsonl"
                seq_cmd = [sys.executable, "-c", SEQUENTIAL, str(bench), str(seq_out), url]
                cli_cmd = [sys.executable, "-m", "agentworld", "bench", "infer", str(bench), "-o", str(cli_out),
                           "-b", f"openai:wm@{url}",
                           "-c", str(args.concurrency)]
                seq = cli = idle = float("inf")
                for _ in range(args.rounds):
                    seq = min(seq, timed(seq_cmd, seq_out))
                    cli = min(cli, timed(cli_cmd, cli_out))
                    # The same command again finds every sample done: start-up, loading, exit.
                    start = time.perf_counter()
                    subprocess.run(cli_cmd, capture_output=True, timeout=300, check=True)
                    idle = min(idle, time.perf_counter() - start)
                got = (len(seq_out.read_text().splitlines()), len(cli_out.read_text().splitlines()))
                if got != (n, n):
                    sys.exit(f"expected {n} predictions from each, got {got}")
                rows.append((n, seq, cli, idle))
    print(f"{args.server} endpoint, delay {args.delay * 1000:.0f} ms, agentworld concurrency {args.concurrency}, "
          f"best of {args.rounds} round(s)")
    print(f"{'samples':>7} {'sequential s':>13} {'agentworld s':>13} {'ratio':>7} {'floor s':>8} {'rerun s':>8}")
    for n, seq, cli, idle in rows:
        # floor: the waits alone, ceil(n / concurrency) rounds of the endpoint's delay.
        floor = -(-n // args.concurrency) * args.delay
        print(f"{n:>7} {seq:>13.2f} {cli:>13.2f} {seq / cli:>6.1f}x {floor:>8.2f} {idle:>8.2f}")
    print("rerun: the same agentworld command with every sample already done (start-up, loading, exit)")


if __name__ == "__main__":
    main()
