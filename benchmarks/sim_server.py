"""How much the simulator adds on top of a world-model call, and how many sessions it holds.

Measured in one run, against the retrieval backend (BM25 over recorded turns, ~1 ms a
call, so the simulator's own cost is visible rather than drowned in model latency):

1. raw ``Backend.complete`` on the messages a session would send;
2. ``WorldModel.predict`` (settings merge, parsing, stats);
3. ``SimEnv.astep`` in process (prompt with ledger, perturbation plan, checks, record);
4. ``POST /step`` over real HTTP to ``agentworld sim serve`` (its own process), with a
   one-write client (and, for comparison, through httpx);
5. a WebSocket step to the same server;
then K sessions opened and stepped concurrently over HTTP, counting errors; then the
step latency (p50/p99) of a few other sessions while one client sends 10 MB actions
(refused with 413: the server's limit is 1 MiB) or 1 MB ones (accepted and simulated),
side by side with the same sessions with no big client.

    python benchmarks/sim_server.py [--steps 200] [--sessions 64 256 1024] [--others 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import yaml

from agentworld.launch import launched
from agentworld.models import DEFAULT_GENERATION, WorldModel, load_backend
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories
from agentworld.sim import PerturbationSpec, Scenario, SimEnv

PROMPT = "root@sandbox:/workspace#"
COMMANDS = ["ls", "pwd", "cat notes.txt", "echo hello > notes.txt", "uname -a", "whoami", "date", "ls -la", "df -h", "env"]


def ks(cmd: str) -> str:
    return json.dumps([{"keystrokes": cmd + "\n", "duration": 1.0}])


def corpus(path: Path, n: int = 300) -> Path:
    trajs = []
    for i in range(n):
        turns = [Turn(action=ks(f"{COMMANDS[(i + t) % len(COMMANDS)]} {i}"),
                      observation=f"{PROMPT} {COMMANDS[(i + t) % len(COMMANDS)]} {i}\noutput line {i}-{t}\n{PROMPT}") for t in range(6)]
        trajs.append(Trajectory(id=f"b{i}", domain="terminal", turns=turns))
    write_trajectories(path, trajs)
    return path


def serve(tmp: Path, source: Path, scenario: Scenario, spec: PerturbationSpec, max_sessions: int):
    """``agentworld sim serve`` in its own process for the duration of the block; yields its URL."""
    (tmp / "scenario.yaml").write_text(yaml.safe_dump(scenario.model_dump(mode="json")))
    (tmp / "perturb.yaml").write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    return launched("sim", "serve", "-b", "retrieval:" + str(source), "--scenario", str(tmp / "scenario.yaml"),
                    "-p", str(tmp / "perturb.yaml"), "--max-sessions", str(max_sessions), "--max-inflight", "64",
                    "--max-waiting", "4096", "--concurrency", "64", timeout=60)


class RawHttp:
    """A minimal keep-alive HTTP/1.1 client: one write per request, so the figure is the
    server's cost and not a client library's (httpx writes a POST in two sends)."""

    def __init__(self, url: str):
        self.host, self.port = url.removeprefix("http://").split(":")

    async def __aenter__(self) -> RawHttp:
        self.r, self.w = await asyncio.open_connection(self.host, int(self.port))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.w.close()

    async def call(self, method: str, path: str, body: object = None) -> dict:
        data = json.dumps(body).encode() if body is not None else b""
        self.w.write(f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.w.drain()
        head = (await self.r.readuntil(b"\r\n\r\n")).decode()
        if not head.startswith("HTTP/1.1 200"):
            raise RuntimeError(head.splitlines()[0])
        size = next(int(line.split(":")[1]) for line in head.split("\r\n") if line.lower().startswith("content-length"))
        return json.loads(await self.r.readexactly(size))


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def others_latency(url: str, others: int, steps: int, big: int | None) -> tuple[list[float], int, list[int]]:
    """Per-step latency of ``others`` sessions stepping ``steps`` times each, while one more
    client sends ``big``-character actions back to back (None: no big client). Returns the
    latencies, how many big requests went out, and their status codes."""
    stop = threading.Event()
    statuses: list[int] = []

    def big_client() -> None:
        # A thread of its own with the body encoded once: the big client's own CPU work
        # (encoding, sending) stays off the loop that times the other sessions.
        with httpx.Client(base_url=url, timeout=300) as client:
            sid = client.post("/reset", json={}).json()["session_id"]
            head, tail = json.dumps({"session_id": sid, "action": "echo "}).encode().rsplit(b'"}', 1)[0], b'"}'
            body = head + b"a" * (big - 5) + tail  # type: ignore[operator]
            headers = {"Content-Type": "application/json"}
            while not stop.is_set():
                r = client.post("/step", content=body, headers=headers)
                statuses.append(r.status_code)
                if r.status_code == 200:  # keep the history (and the prompt) from growing
                    client.post("/reset", json={"session_id": sid})

    async def other(client: httpx.AsyncClient) -> list[float]:
        sid = (await client.post("/reset", json={})).json()["session_id"]
        out = []
        for i in range(steps):
            t0 = time.perf_counter()
            r = await client.post("/step", json={"session_id": sid, "action": ks(COMMANDS[i % len(COMMANDS)])})
            out.append(time.perf_counter() - t0)
            r.raise_for_status()
            if i % 20 == 19:
                await client.post("/reset", json={"session_id": sid})
        await client.post("/close", json={"session_id": sid})
        return out

    thread = threading.Thread(target=big_client, daemon=True) if big else None
    if thread is not None:
        thread.start()
        while not statuses:  # measure while the big client is already at it
            await asyncio.sleep(0.01)
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        lat = [x for xs in await asyncio.gather(*(other(client) for _ in range(others))) for x in xs]
    stop.set()
    if thread is not None:
        thread.join()
    return lat, len(statuses), sorted(set(statuses))


def ms(samples: list[float]) -> str:
    return f"{statistics.mean(samples) * 1000:7.2f} ms (p50 {statistics.median(samples) * 1000:6.2f})"


async def timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        t = time.perf_counter()
        await fn(i)
        out.append(time.perf_counter() - t)
    return out


async def concurrent_sessions(client: httpx.AsyncClient, session_counts: list[int]) -> None:
    """Open K sessions at once, step each three times, print what the server held and refused."""
    print("\nconcurrent sessions over HTTP (3 steps each, all at once)")
    for k in session_counts:
        t0 = time.perf_counter()
        resets = await asyncio.gather(*(client.post("/reset", json={"seed": i}) for i in range(k)), return_exceptions=True)
        sids = [r.json()["session_id"] for r in resets if isinstance(r, httpx.Response) and r.status_code == 200]

        async def episode(sid: str) -> int:
            bad = 0
            for c in ("ls", "cat notes.txt", "pwd"):
                try:
                    r = await client.post("/step", json={"session_id": sid, "action": ks(c)})
                    bad += r.status_code != 200
                except httpx.HTTPError:
                    bad += 1
            return bad

        # Sessions the server refused to open count as errors too.
        errors = sum(await asyncio.gather(*(episode(s) for s in sids))) + (k - len(sids))
        held = (await client.get("/health")).json()["sessions"]
        dt = time.perf_counter() - t0
        print(f"  {k:5d} sessions: {held} held at once, {errors} errors, {3 * len(sids) / dt:7.1f} steps/s")
        await asyncio.gather(*(client.post("/close", json={"session_id": s}) for s in sids))


async def big_client_table(url: str, others: int, others_steps: int) -> None:
    """Step latency of the other sessions with no big client, then next to 1 MB and 10 MB actions."""
    print(f"\nstep latency of {others} other sessions ({others_steps} steps each) while one client sends big actions")
    print(f"  {'big client':<28} {'p50':>9} {'p99':>9} {'max':>9}  big requests")
    for label, big in (("none", None), ("1 MB actions (accepted)", 1_000_000), ("10 MB actions (413)", 10_000_000)):
        lat, sent, codes = await others_latency(url, others, others_steps, big)
        extra = f"{sent} sent, status {codes}" if big else "-"
        print(f"  {label:<28} {pct(lat, 0.5):7.2f}ms {pct(lat, 0.99):7.2f}ms {max(lat) * 1000:7.2f}ms  {extra}")


async def main(steps: int, session_counts: list[int], others: int = 4, others_steps: int = 100) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="aw-sim-bench-"))
    source = corpus(tmp / "c.jsonl")
    backend = load_backend("retrieval", source=source, domain="terminal")
    wm = WorldModel(backend, concurrency=64)
    scenario = Scenario(domain="terminal", first_observation=PROMPT + " ", max_turns=10**6)
    spec = PerturbationSpec(rules=[{"kind": "api_error", "probability": 0.05}])

    # The raw calls get exactly the messages a session sends (history up to 20 turns).
    probe = SimEnv(WorldModel(backend), scenario)
    msgs = []
    for i in range(steps):
        if i % 20 == 0:
            await probe.areset(seed=i)
        msgs.append(probe.messages_for(ks(COMMANDS[i % len(COMMANDS)])))
        await probe.astep(ks(COMMANDS[i % len(COMMANDS)]))
    env = SimEnv(wm, scenario, perturbations=spec)
    raw = await timed(lambda i: backend.complete(msgs[i], DEFAULT_GENERATION), steps)
    runner = await timed(lambda i: wm.predict(msgs[i]), steps)
    # A fresh session per block of 20 steps keeps histories (and prompts) the same size.
    async def sim_step(i: int) -> None:
        if i % 20 == 0:
            await env.areset(seed=i)
        await env.astep(ks(COMMANDS[i % len(COMMANDS)]))
    in_process = await timed(sim_step, steps)

    servers = contextlib.ExitStack()
    url = servers.enter_context(serve(tmp, source, scenario, spec, max(session_counts)))
    try:
        limits = httpx.Limits(max_connections=max(session_counts), max_keepalive_connections=max(session_counts))
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
            async with RawHttp(url) as raw_http:
                sid = None

                async def http_step(i: int) -> None:
                    nonlocal sid
                    if i % 20 == 0:
                        sid = (await raw_http.call("POST", "/reset", {"session_id": sid, "seed": i}))["session_id"]
                    await raw_http.call("POST", "/step", {"session_id": sid, "action": ks(COMMANDS[i % len(COMMANDS)])})
                http = await timed(http_step, steps)
                floor = await timed(lambda i: raw_http.call("GET", "/health"), steps)
                await raw_http.call("POST", "/close", {"session_id": sid})
            sid = None

            async def httpx_step(i: int) -> None:
                nonlocal sid
                if i % 20 == 0:
                    sid = (await client.post("/reset", json={"session_id": sid, "seed": i})).json()["session_id"]
                (await client.post("/step", json={"session_id": sid, "action": ks(COMMANDS[i % len(COMMANDS)])})).raise_for_status()
            via_httpx = await timed(httpx_step, steps)
            await client.post("/close", json={"session_id": sid})

            from websockets.asyncio.client import connect

            async with connect(url.replace("http", "ws") + "/ws") as ws:
                async def ws_step(i: int) -> None:
                    if i % 20 == 0:
                        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
                        await ws.recv()
                    await ws.send(json.dumps({"type": "step", "data": {"action": ks(COMMANDS[i % len(COMMANDS)])}}))
                    assert json.loads(await ws.recv())["type"] == "observation"
                wsock = await timed(ws_step, steps)

            print(f"per step, mean of {steps} (retrieval backend, terminal domain)")
            print(f"  raw backend.complete     {ms(raw)}")
            print(f"  WorldModel.predict       {ms(runner)}   x{statistics.mean(runner) / statistics.mean(raw):.2f} of raw")
            print(f"  SimEnv.astep             {ms(in_process)}   x{statistics.mean(in_process) / statistics.mean(raw):.2f} of raw")
            print(f"  HTTP POST /step          {ms(http)}   x{statistics.mean(http) / statistics.mean(raw):.2f} of raw")
            print(f"  HTTP GET /health (floor) {ms(floor)}   the HTTP round trip alone, no simulation")
            print(f"  POST /step through httpx {ms(via_httpx)}   the same step, httpx's client cost included")
            print(f"  WebSocket step           {ms(wsock)}   x{statistics.mean(wsock) / statistics.mean(raw):.2f} of raw")
            print(f"  server overhead per step: HTTP {(statistics.mean(http) - statistics.mean(raw)) * 1000:.2f} ms, "
                  f"WebSocket {(statistics.mean(wsock) - statistics.mean(raw)) * 1000:.2f} ms over the raw call")

            await concurrent_sessions(client, session_counts)

        await big_client_table(url, others, others_steps)
    finally:
        servers.close()
    await wm.aclose()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--sessions", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--others", type=int, default=4, help="sessions measured next to the big client")
    ap.add_argument("--others-steps", type=int, default=100, help="steps each of them takes")
    args = ap.parse_args()
    asyncio.run(main(args.steps, args.sessions, args.others, args.others_steps))
