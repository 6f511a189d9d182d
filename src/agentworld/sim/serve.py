"""Serving a simulated tool server until it is told to stop, recording what it played."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.records.trajectory import Trajectory


def trajectory_appender(path: Path) -> Callable[[Trajectory], None]:
    """A callback that appends each trajectory it gets to the JSONL file at ``path``
    (opened per call, so each record is on disk as soon as its client ends)."""
    from agentworld.jsonl import JsonlAppender

    def append(traj: Trajectory) -> None:
        with JsonlAppender(path) as fh:
            fh.append(traj)

    return append


def serve_stdio(facade: Any) -> None:
    """Serve ``facade`` (a :class:`~agentworld.sim.mcp_facade.SimulatedToolServer`) over
    stdio until the client hangs up, SIGINT or SIGTERM; every client environment is recorded
    either way. On a signal the process records and exits at once: the stdin reader thread
    sits in a blocking read that no cancellation reaches."""
    import os
    import signal
    import sys

    def on_signal(sig: int) -> None:
        facade.close_all()
        sys.stdout.flush()
        os._exit(128 + sig)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, sig)
        await facade.serve_stdio()

    try:
        asyncio.run(main())
    finally:
        facade.close_all()
