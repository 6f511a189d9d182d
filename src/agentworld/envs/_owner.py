"""Who owns a leftover: a process id together with its start time.

A pid alone is not an identity: after a run is killed its pid can be handed to an
unrelated process, which would make the run's leftovers look owned forever (or, worse,
a live run's look abandoned). The start time (clock ticks since boot, from
``/proc/<pid>/stat``) tells the two apart.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER_FILE = "owner"
"""Owner record inside a leftover folder: one token, as :func:`token` writes it."""
OWNER_VAR = "AGENTWORLD_OWNER"
"""Environment variable that tags a sandbox launcher's process with its owner's token."""


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None when it is not running
    (no such process, or a zombie: dead, only waiting for its parent to collect it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of the whole line


def token(pid: int | None = None) -> str:
    """``"<pid>:<start time>"`` of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid)}"


def alive(tok: str) -> bool:
    """Whether the process a token (or a bare pid, as older owner files hold) names still runs."""
    pid_s, _, start_s = tok.strip().partition(":")
    pid = int(pid_s)
    now = start_time(pid)
    if now is None:
        return False
    return not start_s or start_s == "None" or int(start_s) == now


def write_owner(folder: Path) -> None:
    """Mark ``folder`` as this process's (sweeps remove it once the process is gone)."""
    (folder / OWNER_FILE).write_text(token() + "\n")


def owner_alive(folder: Path) -> bool | None:
    """Whether ``folder``'s owner runs; None when the folder has no readable owner record."""
    try:
        return alive((folder / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
