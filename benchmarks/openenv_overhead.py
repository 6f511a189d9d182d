"""What the agent-framework interfaces add to a simulated step.

Against the retrieval backend (~1 ms a call, so the interfaces' own cost shows), the
median and p99 latency of one step:

1. ``SimEnv.step`` in process (the baseline);
2. ``gymnasium.make("agentworld/Sim-v1")`` in process (the Gymnasium wrapper and its
   checker/order wrappers);
3. openenv-core's ``GenericEnvClient`` (sync) over loopback to this project's server
   (``agentworld sim serve``'s app: OpenEnv's WebSocket protocol with the session cap,
   token and size limits);
4. the same client to openenv-core's own ``create_app`` over the same environment
   (``agentworld.sim.openenv.openenv_app``).

Both servers run in a thread of this process (uvicorn), so they pay the same GIL.

    python benchmarks/openenv_overhead.py [--steps 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium
import uvicorn
from openenv.core import GenericEnvClient
from sim_server import PROMPT, corpus, ks

from agentworld.envs.gym import register_envs
from agentworld.launch import free_port
from agentworld.models import WorldModel, load_backend
from agentworld.sim import Scenario, SimEnv
from agentworld.sim.openenv import openenv_app
from agentworld.sim.server import create_app
from agentworld.sim.sessions import SessionManager


def timed(step: Callable[[int], object], n: int) -> tuple[float, float]:
    """Median and p99 of ``n`` calls, in ms (after 10 warm-up calls)."""
    for i in range(10):
        step(i)
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


class Served:
    """A uvicorn server for ``app`` on a free loopback port, in a thread."""

    def __init__(self, app: object):
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def client_steps(url: str, n: int) -> tuple[float, float]:
    with GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=0)
        return timed(lambda i: env.step({"text": ks(f"ls {i % 50}")}), n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    source = corpus(Path(tempfile.mkdtemp()) / "corpus.jsonl")
    wm = WorldModel(load_backend("retrieval", source=source, domain="terminal"))
    # A long episode: no step ends it, so every measured step is a real one.
    scenario = Scenario(domain="terminal", first_observation=PROMPT + " ", max_turns=10 * args.steps)

    rows = []
    env = SimEnv(wm, scenario)
    env.reset(seed=0)
    rows.append(("SimEnv.step in process", timed(lambda i: env.step(ks(f"ls {i % 50}")), args.steps)))
    register_envs()
    genv = gymnasium.make("agentworld/Sim-v1", world_model=wm, scenario=scenario)
    genv.reset(seed=0)
    rows.append(("gymnasium.make(agentworld/Sim-v1).step", timed(lambda i: genv.step(ks(f"ls {i % 50}")), args.steps)))
    with Served(create_app(SessionManager(wm, scenario))) as url:
        rows.append(("GenericEnvClient -> agentworld server (WS)", client_steps(url, args.steps)))
    with Served(openenv_app(lambda: SimEnv(wm, scenario), max_concurrent_envs=2)) as url:
        rows.append(("GenericEnvClient -> openenv-core create_app (WS)", client_steps(url, args.steps)))

    print(f"step latency over {args.steps} steps (retrieval backend), ms")
    print(f"{'path':<50} {'p50':>8} {'p99':>8}")
    for name, (p50, p99) in rows:
        print(f"{name:<50} {p50:>8.2f} {p99:>8.2f}")


if __name__ == "__main__":
    main()
