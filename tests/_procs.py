"""Reading the host's process table from /proc, for the containment and leftover tests."""

from __future__ import annotations

from pathlib import Path

from agentworld.envs._owner import OWNER_VAR, start_time


def processes() -> dict[int, int]:
    """pid -> parent pid of every running process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            out[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return out


def descendants(roots: set[int]) -> set[int]:
    table = processes()
    found, frontier = set(), set(roots)
    while frontier:
        found |= frontier
        frontier = {pid for pid, ppid in table.items() if ppid in frontier} - found
    return found - roots


def status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def tagged(owner_token: str) -> set[int]:
    """Processes whose environment carries the owner tag ``owner_token`` (sandbox launchers)."""
    needle = f"{OWNER_VAR}={owner_token}".encode()
    out = set()
    for pid in processes():
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                out.add(pid)
        except OSError:
            pass
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def identities(pids: set[int]) -> set[tuple[int, int | None]]:
    """(pid, start time) pairs: a process is the same one only if both match later."""
    return {(pid, start_time(pid)) for pid in pids}


def still_running(ids: set[tuple[int, int | None]]) -> set[int]:
    return {pid for pid, start in ids if start is not None and start_time(pid) == start}
