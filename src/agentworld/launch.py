"""Run an ``agentworld`` server command in a child process until a block ends.

Scripts, benchmarks and tests start ``agentworld serve`` or ``agentworld sim serve`` the
same way: on a free loopback port, waiting until its ``/health`` answers, stopping it on
the way out. The server's output goes to a temporary file rather than a pipe, so a
chatty server never blocks on a full pipe, and its tail is quoted when it dies early.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def launched(*args: str, timeout: float = 120.0, host: str = "127.0.0.1", ready_path: str = "/health") -> Iterator[str]:
    """Run ``python -m agentworld <args> --host H --port P``; yield ``http://H:P`` once
    ``ready_path`` answers 200. Raises ``RuntimeError`` (with the server's last output) if
    it exits first, ``TimeoutError`` if it is not ready within ``timeout`` seconds."""
    port = free_port(host)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-m", "agentworld", *args, "--host", host, "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        url = f"http://{host}:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"`agentworld {' '.join(args)}` exited with {proc.returncode}:\n{tail}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + ready_path, timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"`agentworld {' '.join(args)}` was not ready after {timeout:.0f} s")
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
