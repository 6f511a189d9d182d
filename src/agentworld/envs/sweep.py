"""Remove what killed runs left behind, for every kind of environment.

A run killed with SIGKILL closes nothing. Everything it makes on the host is registered
where a sweep finds it without the run's help:

- a folder whose name says what it is -- ``aw-sandbox-``/``aw-snapshot-`` (terminal, SWE
  and desktop sandboxes), ``aw-mcp-`` (MCP episodes), ``aw-web-`` (web sites, browser
  jails) in the temporary folder, ``.test-site-`` (a test site being unpacked) in the SWE
  cache -- holding an ``owner`` record: a pid with its start time, so a recycled pid is
  never mistaken for the owner (:mod:`agentworld.envs._owner`);
- mounts (tmpfs, overlay, the sandbox's user namespace) only inside such a folder, so
  ``/proc/self/mounts`` tells which are whose;
- cgroups, listed in the folder's ``cgroup`` file;
- processes: sandbox launchers, MCP and web servers and browsers carry the owner
  variable in their environment; everything else runs in one of those cgroups.

:func:`find_leftovers` lists what belongs to owners that are gone; :func:`sweep_now` removes
it (processes first, then per folder: its tmux server, cgroups, mounts, the folder) and
never touches what a live run owns. Every ``agentworld`` command that can start
environments sweeps when it starts (``agentworld.cli.main``), every environment once per
process when it is first created (cached: later starts cost nothing), and
``agentworld env sweep`` on demand. Search episodes keep everything in memory.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agentworld.envs._owner import OWNER_FILE, OWNER_VAR, alive, owner_alive, start_time

MCP_PREFIX = "aw-mcp-"
"""Temporary folder of one MCP episode (workspace and server log)."""
WEB_PREFIX = "aw-web-"
"""Temporary folder of one set of web sites (database, server logs) or one browser jail;
their servers and browsers carry the owner variable, so a sweep ends them."""
SANDBOX_PREFIX = "aw-sandbox-"
"""A sandbox's folder (``agentworld.envs.sandbox.sandbox.PREFIX``)."""
SNAPSHOT_PREFIX = "aw-snapshot-"
"""A sandbox snapshot's folder (``agentworld.envs.sandbox.sandbox.SNAPSHOT_PREFIX``)."""
SWE_SITE_PREFIX = ".test-site-"
"""The SWE cache's test site while it is unpacked (``agentworld.envs.swe.repos.test_site``)."""

FAMILIES = {SANDBOX_PREFIX: "sandbox", SNAPSHOT_PREFIX: "snapshot", MCP_PREFIX: "mcp", WEB_PREFIX: "web"}
"""Prefix of a leftover folder in the temporary folder -> its family."""
LABELS = {"sandbox": "sandbox", "snapshot": "sandbox snapshot", "mcp": "MCP episode", "web": "web sites or browser jail",
          "swe": "SWE test site, half unpacked"}
KINDS = ("process", "sandbox", "folder", "mount", "cgroup")
ORPHAN_AGE_S = 600.0
"""An empty folder without an owner record is its maker's only when younger than this (a run
killed between making the folder and writing the record leaves one; a live run writes the
record at once)."""
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class Leftover:
    """One thing a killed run left behind."""

    kind: str
    """One of :data:`KINDS`."""
    name: str
    """The folder, mount point or cgroup; for a process, its pid."""
    owner: str
    """The gone owner's token (``pid:start time``); empty for a folder that never got one."""
    family: str = ""
    """What made it: ``sandbox``, ``snapshot``, ``mcp``, ``web`` or ``swe`` (see :data:`LABELS`)."""
    detail: str = ""
    """A process's command line, a mount's filesystem type, a cgroup's controllers."""
    folder: str = ""
    """The leftover folder a mount, cgroup or process belongs to (empty for the folder itself
    and for processes found by their owner tag)."""


@dataclass(frozen=True)
class SweepReport:
    """What one sweep removed (with ``dry_run``: would remove) and what resisted."""

    items: tuple[Leftover, ...] = ()
    failed: tuple[Leftover, ...] = ()
    """Found but still there after the sweep (a busy mount, a process that would not die)."""
    dry_run: bool = False

    def count(self, kind: str | None = None, family: str | None = None) -> int:
        return sum(1 for i in self.items if kind in (None, i.kind) and family in (None, i.family))

    @property
    def processes(self) -> int:
        """Processes still running for a gone owner (killed)."""
        return self.count("process")

    @property
    def sandboxes(self) -> int:
        """Terminal/SWE/desktop sandboxes and snapshots (their mounts and cgroups are counted apart)."""
        return self.count("sandbox")

    @property
    def mcp_dirs(self) -> int:
        return self.count("folder", "mcp")

    @property
    def web_dirs(self) -> int:
        """Web site folders (database, server logs) and browser jails."""
        return self.count("folder", "web")

    @property
    def total(self) -> int:
        return len(self.items)

    def __str__(self) -> str:
        if not self.items:
            return "nothing left behind by killed runs"
        parts = [(self.sandboxes, "sandbox(es)"), (self.mcp_dirs, "MCP folder(s)"), (self.web_dirs, "web site folder(s)"),
                 (self.count("folder", "swe"), "SWE folder(s)"),
                 (self.count("folder") - self.mcp_dirs - self.web_dirs - self.count("folder", "swe"), "empty folder(s)"),
                 (self.count("mount"), "mount(s)"), (self.count("cgroup"), "cgroup(s)"), (self.processes, "process(es)")]
        verb = "would remove" if self.dry_run else "removed"
        text = f"{verb} " + ", ".join(f"{n} {what}" for n, what in parts if n) + " left behind by killed runs"
        return text + (f"; {len(self.failed)} resisted" if self.failed else "")


# -- finding ---------------------------------------------------------------------------------


@dataclass
class _Folder:
    path: Path
    family: str
    owner: str
    mounts: list[tuple[str, str]] = field(default_factory=list)
    """(mount point, filesystem type), deepest first."""
    cgroups: list[Path] = field(default_factory=list)
    pids: list[tuple[int, int]] = field(default_factory=list)
    """(pid, start time) of the processes in those cgroups."""

    def items(self) -> list[Leftover]:
        kind = "sandbox" if self.family in ("sandbox", "snapshot") and self.owner else "folder"
        where = str(self.path)
        found = [Leftover(kind, where, self.owner, self.family, LABELS[self.family] + ("" if self.owner else ", no owner record"))]
        found += [Leftover("process", str(pid), self.owner, self.family, _cmdline(pid), where) for pid, _ in self.pids]
        found += [Leftover("mount", point, self.owner, self.family, fstype, where) for point, fstype in self.mounts]
        by_name: dict[str, list[Path]] = {}
        for d in self.cgroups:
            by_name.setdefault(d.name, []).append(d)
        for dirs in by_name.values():
            controllers = [d.relative_to(CGROUP_ROOT).parts[0] for d in dirs if d.is_relative_to(CGROUP_ROOT)]
            detail = ", ".join(controllers) if len(dirs) > 1 else ""
            found.append(Leftover("cgroup", str(dirs[0]), self.owner, self.family, detail, where))
        return found


@dataclass
class _Plan:
    orphans: list[tuple[int, int, str]] = field(default_factory=list)
    """(pid, start time, owner token) of tagged processes whose owner is gone."""
    folders: list[_Folder] = field(default_factory=list)

    def starts(self) -> dict[int, int]:
        """pid -> start time of every process found."""
        return {pid: start for f in self.folders for pid, start in f.pids} | {pid: start for pid, start, _ in self.orphans}

    def items(self) -> list[Leftover]:
        found = [Leftover("process", str(pid), owner, "", _cmdline(pid)) for pid, _, owner in self.orphans]
        tagged = {pid for pid, _, _ in self.orphans}
        for f in self.folders:
            found += [i for i in f.items() if not (i.kind == "process" and int(i.name) in tagged)]
        return found


def find_leftovers(base_dir: str | Path | None = None) -> list[Leftover]:
    """What killed runs left in ``base_dir`` (default: the temporary folder), in the SWE
    cache and in the process table; nothing is removed."""
    return _plan(_base(base_dir)).items()


def _base(base_dir: str | Path | None) -> Path:
    return Path(base_dir or tempfile.gettempdir()).resolve()  # /proc/mounts names resolved paths


def _plan(base: Path) -> _Plan:
    plan = _Plan(orphans=_tagged_orphans())
    mounts = _mounts()
    places = [(base, prefix, family) for prefix, family in FAMILIES.items()]
    places.append((swe_cache_dir(), SWE_SITE_PREFIX, "swe"))
    for where, prefix, family in places:
        for path in sorted(where.glob(f"{prefix}*")) if where.is_dir() else []:
            status = owner_alive(path)
            if status is True or (status is None and not _abandoned_empty(path)):
                continue  # a live run's, or not ours to judge
            try:
                owner = (path / OWNER_FILE).read_text().strip() if status is False else ""
            except OSError:
                continue  # removed meanwhile
            f = _Folder(path, family, owner)
            prefix_s = str(path.resolve())
            f.mounts = sorted(((p, t) for p, t in mounts if p == prefix_s or p.startswith(prefix_s + "/")),
                              key=lambda m: len(m[0]), reverse=True)
            f.cgroups = _recorded_cgroups(path)
            pids = sorted({pid for d in f.cgroups for pid in _cgroup_pids(d)})
            f.pids = [(pid, start) for pid in pids if (start := start_time(pid)) is not None]
            plan.folders.append(f)
    return plan


def _abandoned_empty(path: Path) -> bool:
    """An ownerless folder its maker died with: empty (or holding only an empty owner
    record), mounting nothing, and older than :data:`ORPHAN_AGE_S`."""
    try:
        entries = list(path.iterdir())
        if entries and (len(entries) > 1 or entries[0].name != OWNER_FILE or entries[0].stat().st_size):
            return False
        return not os.path.ismount(path) and time.time() - path.stat().st_mtime > ORPHAN_AGE_S
    except OSError:
        return False


def _tagged_orphans() -> list[tuple[int, int, str]]:
    needle = f"{OWNER_VAR}=".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue  # gone already, or another user's
        tags = [v[len(needle):].decode(errors="replace") for v in environ.split(b"\0") if v.startswith(needle)]
        try:
            if tags and not alive(tags[0]) and (start := start_time(int(entry.name))) is not None:
                found.append((int(entry.name), start, tags[0]))
        except ValueError:
            continue  # a malformed tag is not ours
    return found


def _recorded_cgroups(folder: Path) -> list[Path]:
    try:
        listed = (folder / "cgroup").read_text().split()
    except OSError:
        return []
    return [Path(x) for x in listed if Path(x).is_dir()]


def _cgroup_pids(d: Path) -> list[int]:
    try:
        return [int(p) for p in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    # The kernel writes space, tab, newline and backslash in mount points as octal escapes.
    unescape = re.compile(r"\\([0-7]{3})")
    return [(unescape.sub(lambda m: chr(int(m.group(1), 8)), parts[1]), parts[2])
            for parts in (line.split() for line in lines) if len(parts) > 2]


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text if len(text) <= 80 else text[:77] + "..."


def swe_cache_dir() -> Path:
    """The SWE environment's cache, as ``agentworld.envs.swe.repos.cache_dir()`` finds it
    (read here without importing the environment: sweeping at start-up stays cheap)."""
    if env := os.environ.get("AGENTWORLD_SWE_CACHE"):
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentworld")) / "swe"


# -- removing --------------------------------------------------------------------------------


def sweep_leftovers(base_dir: str | Path | None = None) -> SweepReport:
    """Sweep ``base_dir`` (default: the temporary folder) once per process; later calls
    return the first call's report without looking again."""
    return _once(os.getpid(), _base(base_dir))  # keyed by pid: a forked child sweeps for itself


@cache
def _once(pid: int, base: Path) -> SweepReport:
    return sweep_now(base)


def sweep_now(base_dir: str | Path | None = None, *, dry_run: bool = False) -> SweepReport:
    """Remove now what owners that are gone left in ``base_dir`` (default: the temporary
    folder), in the SWE cache and in the process table; ``dry_run``: only list it."""
    try:
        plan = _plan(_base(base_dir))
    except OSError as exc:
        warnings.warn(f"looking for leftovers of killed runs: {exc}", RuntimeWarning, stacklevel=2)
        return SweepReport(dry_run=dry_run)
    found = plan.items()
    if dry_run:
        return SweepReport(tuple(found), dry_run=True)
    # Processes first, so nothing still writes into the folders removed next.
    for pid, start, _ in plan.orphans:
        _guarded(_kill, pid, start)
    for f in plan.folders:
        _guarded(_remove_folder, f)
    failed = _still_there(found, plan.starts())
    return SweepReport(tuple(i for i in found if i not in failed), tuple(failed))


def kill_orphans() -> int:
    """SIGKILL every process tagged with the owner variable whose owner is gone; how many.

    Sandbox launchers leave ``AGENTWORLD_OWNER`` in bwrap's own environment (the
    sandboxed program never sees it); killing bwrap ends its PID namespace, so nothing
    started inside survives.
    """
    return sum(_guarded(_kill, pid, start) for pid, start, _ in _tagged_orphans())


def _guarded(step: Callable[..., int], *args: object) -> int:
    """A sweep step that cannot finish is reported, not raised: starting an environment
    must not fail because an old run's leftovers resist (say, a busy mount)."""
    try:
        return step(*args)
    except (OSError, subprocess.SubprocessError) as exc:
        warnings.warn(f"sweeping leftovers of killed runs: {exc}", RuntimeWarning, stacklevel=3)
        return 0


def _kill(pid: int, start: int) -> int:
    """SIGKILL ``pid`` if it is still the process that started at ``start`` (a pidfd pins
    it between the check and the kill)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return 0  # gone already
    try:
        if start_time(pid) != start:
            return 0
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        select.select([pidfd], [], [], 5.0)  # readable once it has exited
        return 1
    finally:
        os.close(pidfd)


def _remove_folder(f: _Folder) -> int:
    if (f.path / "tmux.sock").exists() and shutil.which("tmux"):
        subprocess.run(["tmux", "-S", str(f.path / "tmux.sock"), "kill-server"], capture_output=True, timeout=10)
    if f.cgroups:  # the tmux server and every sandboxed process live in these
        from agentworld.envs.sandbox.limits import Cgroup  # lazy: needed only when there is one

        Cgroup(f.cgroups).remove()
    unmount_below(f.path)
    if f.owner:
        shutil.rmtree(f.path, ignore_errors=True)
    else:  # empty but for an empty owner record (_abandoned_empty); rmdir refuses anything more
        record = f.path / OWNER_FILE
        if record.exists() and record.stat().st_size == 0:
            record.unlink()
        f.path.rmdir()
    return 1


def _still_there(found: list[Leftover], starts: dict[int, int]) -> list[Leftover]:
    points = {p for p, _ in _mounts()}
    left = []
    for item in found:
        if item.kind == "process":
            gone = start_time(int(item.name)) != starts[int(item.name)]  # exited (or the pid now names another)
        elif item.kind == "mount":
            gone = item.name not in points
        else:
            gone = not Path(item.name).exists()
        if not gone:
            left.append(item)
    return left


def unmount_below(folder: Path) -> int:
    """Unmount every mount at or under ``folder``, the latest first (the mount table lists
    them in the order they were made: a sandbox's overlay goes before the tmpfs holding its
    upper layer, which a deepest-path order would try first); how many."""
    prefix = str(folder.resolve())
    under = [p for p, _ in _mounts() if p == prefix or p.startswith(prefix + "/")]
    mine = list(dict.fromkeys(reversed(under)))
    for point in mine:
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)
    return len(mine)


def forget() -> None:
    """Let the next :func:`sweep_leftovers` look again (for long-lived processes and tests)."""
    _once.cache_clear()
