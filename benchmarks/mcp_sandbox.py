"""What confining an MCP server costs: one sandboxed process, each server's start, a workspace.

Prints, from one run on this machine (medians over ``--reps``):
- a confined ``true`` (launcher, namespaces, bwrap) next to a plain host ``true``;
- each pinned server's start-up to a finished MCP handshake and tool list;
- building the git template's workspace (its repository is made inside a sandbox);
- the sweep an environment start runs once per process, with nothing to remove.

    python benchmarks/mcp_sandbox.py [--reps 10]

To compare with another checkout, run it with that checkout's ``src`` on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agentworld.envs.mcp import SERVER_NAMES, McpHub, make_task, server_spec
from agentworld.envs.mcp import servers as mcp_servers
from agentworld.envs.mcp.servers import ServerSpec, confined_argv, server_env
from agentworld.envs.mcp.workspace import build_workspace


def _median_ms(fn, reps: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def _fresh_workspace(root: Path) -> Path:
    ws = Path(tempfile.mkdtemp(dir=root)) / "ws"
    for sub in ("files", "site", "repo"):
        (ws / sub).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    if hasattr(mcp_servers, "hand_over"):  # absent in checkouts whose servers ran as root
        mcp_servers.hand_over(ws)
    return ws


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="aw-bench-mcp-"))
    try:
        ws = _fresh_workspace(root)
        spec = ServerSpec("true", "", ("true",))
        argv, env = confined_argv(spec, ws), server_env(spec)
        host = _median_ms(lambda: subprocess.run(["true"], check=True), args.reps)
        boxed = _median_ms(lambda: subprocess.run(argv, env=env, check=True), args.reps)
        print(f"process: host {host:.1f} ms, confined {boxed:.1f} ms (+{boxed - host:.1f} ms)")
        print("server start to tool list (ms):")
        for name in SERVER_NAMES:
            def start(name: str = name) -> None:
                with McpHub([server_spec(name)], _fresh_workspace(root)):
                    pass
            print(f"  {name:<22} {_median_ms(start, max(1, args.reps // 2)):8.1f}")
        options = make_task(0, "git").options
        build = _median_ms(lambda: build_workspace(Path(tempfile.mkdtemp(dir=root)) / "ws", options), args.reps)
        print(f"git template workspace ({len(options['repo']['commits'])} commits): {build:.1f} ms")
        try:
            from agentworld.envs.sweep import sweep_now
        except ImportError:
            print("sweep: not in this checkout")
        else:
            print(f"sweep with nothing to remove: {_median_ms(lambda: sweep_now(root), args.reps):.1f} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
