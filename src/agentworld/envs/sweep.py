"""Remove what killed runs left behind, for every kind of environment.

A run killed with SIGKILL closes nothing: terminal and SWE sandboxes keep their tmpfs,
overlay mounts, cgroups and tmux servers; MCP episodes keep their temporary folders
(workspace and server log). :func:`sweep_leftovers` removes those whose owning process
is gone -- a pid together with its start time, so a recycled pid is never mistaken for
the owner (see :mod:`agentworld.envs._owner`) -- and never touches a live run's. Every
environment runs it once per process when it starts (cached: later starts cost nothing),
and every ``agentworld collect`` command runs it before recording.

Search episodes keep everything in memory and leave nothing behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agentworld.envs._owner import OWNER_VAR, alive, owner_alive

MCP_PREFIX = "aw-mcp-"
"""Temporary folder of one MCP episode (workspace and server log)."""
WEB_PREFIX = "aw-web-"
"""Temporary folder of one set of web sites (database, server logs); their servers and
browsers carry the owner variable, so :func:`kill_orphans` ends them."""


@dataclass(frozen=True)
class SweepReport:
    """What one sweep removed."""

    processes: int = 0
    """Sandboxed processes still running for a dead owner (killed)."""
    sandboxes: int = 0
    """Terminal/SWE sandboxes: mounts, cgroup, tmux server and folder."""
    mcp_dirs: int = 0
    """MCP episode folders."""
    web_dirs: int = 0
    """Web site folders (database, server logs)."""

    @property
    def total(self) -> int:
        return self.processes + self.sandboxes + self.mcp_dirs + self.web_dirs

    def __str__(self) -> str:
        parts = [(self.sandboxes, "sandbox(es)"), (self.mcp_dirs, "MCP folder(s)"), (self.web_dirs, "web site folder(s)"), (self.processes, "process(es)")]
        return "removed " + ", ".join(f"{n} {what}" for n, what in parts if n) + " left behind by killed runs"


def sweep_leftovers(base_dir: str | Path | None = None) -> SweepReport:
    """Sweep ``base_dir`` (default: the temporary folder) once per process; later calls
    return the first call's report without looking again."""
    base = Path(base_dir or tempfile.gettempdir()).resolve()
    return _once(os.getpid(), base)  # keyed by pid: a forked child sweeps for itself


@cache
def _once(pid: int, base: Path) -> SweepReport:
    return sweep_now(base)


def sweep_now(base_dir: str | Path | None = None) -> SweepReport:
    """Sweep ``base_dir`` now (processes are looked for machine-wide)."""
    from agentworld.envs.sandbox import sweep_stale  # lazy: pure Python, but not needed by every caller

    base = Path(base_dir or tempfile.gettempdir())
    # Processes first, so nothing still writes into the folders removed next.
    return SweepReport(processes=_guarded(kill_orphans), sandboxes=_guarded(sweep_stale, base),
                       mcp_dirs=_guarded(_sweep_mcp_dirs, base), web_dirs=_guarded(_sweep_owned_dirs, base, WEB_PREFIX))


def _guarded(step: Callable[..., int], *args: object) -> int:
    """A sweep step that cannot finish is reported, not raised: starting an environment
    must not fail because an old run's leftovers resist (say, a busy mount)."""
    try:
        return step(*args)
    except OSError as exc:
        warnings.warn(f"sweeping leftovers of killed runs: {exc}", RuntimeWarning, stacklevel=3)
        return 0


def kill_orphans() -> int:
    """SIGKILL every process tagged with the owner variable whose owner is gone.

    Sandbox launchers leave ``AGENTWORLD_OWNER`` in bwrap's own environment (the
    sandboxed program never sees it); killing bwrap ends its PID namespace, so nothing
    started inside survives. A pidfd pins the process between the check and the kill.
    """
    killed = 0
    needle = f"{OWNER_VAR}=".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            pidfd = os.pidfd_open(int(entry.name))
        except OSError:
            continue  # gone already
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                environ = fh.read()
            tags = [v[len(needle):].decode() for v in environ.split(b"\0") if v.startswith(needle)]
            if tags and not alive(tags[0]):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                killed += 1
        except (OSError, ValueError):
            pass  # not readable (another user's) or exited meanwhile
        finally:
            os.close(pidfd)
    return killed


def _sweep_mcp_dirs(base: Path) -> int:
    return _sweep_owned_dirs(base, MCP_PREFIX)


def _sweep_owned_dirs(base: Path, prefix: str) -> int:
    swept = 0
    for folder in base.glob(f"{prefix}*"):
        if owner_alive(folder) is False:  # None: no owner record, not ours to judge
            if (folder / "cgroup").exists():  # a browser jail's (envs/web/jail.py)
                from agentworld.envs.sandbox.limits import Cgroup

                Cgroup([Path(x) for x in (folder / "cgroup").read_text().split()]).remove()
            unmount_below(folder)  # an MCP episode's workspace tmpfs
            shutil.rmtree(folder, ignore_errors=True)
            swept += 1
    return swept


def forget() -> None:
    """Let the next :func:`sweep_leftovers` look again (for long-lived processes and tests)."""
    _once.cache_clear()


def unmount_below(folder: Path) -> int:
    """Unmount every mount at or under ``folder`` (deepest first); how many."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return 0
    prefix = str(folder.resolve())
    # /proc/mounts escapes spaces and the like in octal; our folders have none.
    points = [line.split()[1] for line in lines if len(line.split()) > 1]
    mine = sorted({p for p in points if p == prefix or p.startswith(prefix + "/")}, key=len, reverse=True)
    for point in mine:
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)
    return len(mine)
