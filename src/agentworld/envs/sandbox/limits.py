"""Resource limits for one sandbox: cgroups where the machine allows, rlimits always.

cgroups bound the whole sandbox (memory, process count, CPU share) and let teardown
kill every process it ever started; rlimits bound each process (CPU seconds, file size,
open files) and stand in for cgroups when those cannot be created (then memory falls
back to an address-space limit per process).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "freezer")
"""The v1 controllers a sandbox's cgroup uses (one folder each, where mounted)."""


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use. Disk is a tmpfs holding the episode's writable layer."""

    memory_mb: int = 2048
    """All processes together (cgroup); per process address space without cgroups."""
    pids: int = 256
    """Processes and threads alive at once (a fork bomb stops here)."""
    cpus: float = 1.0
    """CPU share of the whole sandbox, in cores."""
    cpu_seconds: int = 600
    """CPU time of any single process before SIGXCPU/SIGKILL."""
    file_size_mb: int = 256
    """Largest single file a process may write."""
    disk_mb: int = 512
    """Everything written to the root filesystem and /workspace together."""
    nofile: int = 1024
    output_bytes: int = 1_000_000
    """Captured stdout/stderr of one :meth:`Sandbox.run`; more is cut and the command stopped."""
    wall_seconds: float = 120.0
    """Default timeout of one :meth:`Sandbox.run`."""


class Cgroup:
    """One sandbox's cgroup (v2 unified, or one folder per v1 controller)."""

    def __init__(self, dirs: list[Path]):
        self.dirs = dirs

    @classmethod
    def create(cls, limits: Limits, record: Path | None = None) -> Cgroup | None:
        """A fresh cgroup with ``limits`` applied, or None when cgroups are not writable.

        ``record`` (a file in the owner's folder) gets the cgroup's folders before any
        exists, so a run killed in between leaves nothing a sweep cannot find; it is
        removed again when no cgroup could be made.
        """
        name = f"agentworld-{uuid.uuid4().hex[:12]}"
        v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        planned = [_parent_v2() / name] if v2 else \
            [_parent_v1(c) / name for c in _V1_CONTROLLERS if (CGROUP_ROOT / c).is_dir()]
        if record is not None:
            record.write_text("".join(f"{d}\n" for d in planned))
        try:
            return cls._create_v2(planned[0], limits) if v2 else cls._create_v1(planned, limits)
        except OSError:
            if record is not None:
                record.unlink(missing_ok=True)
            return None

    @classmethod
    def _create_v2(cls, d: Path, limits: Limits) -> Cgroup:
        parent = d.parent
        wanted = {"memory", "pids", "cpu"} & set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
        for attempt in range(3):
            try:
                parent.mkdir(exist_ok=True)
                for level in (parent.parent, parent):
                    (level / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
                d.mkdir()
                break
            except FileNotFoundError:  # the last sandbox removed the parent meanwhile
                if attempt == 2:
                    raise
        cg = cls([d])
        _write(d / "memory.max", str(limits.memory_mb << 20))
        _write(d / "memory.swap.max", "0")
        _write(d / "pids.max", str(limits.pids))
        _write(d / "cpu.max", f"{int(limits.cpus * 100_000)} 100000")
        return cg

    @classmethod
    def _create_v1(cls, planned: list[Path], limits: Limits) -> Cgroup:
        """One folder per mounted controller of :data:`_V1_CONTROLLERS` (``planned``)."""
        settings = {
            "memory": {"memory.limit_in_bytes": str(limits.memory_mb << 20)},
            "pids": {"pids.max": str(limits.pids)},
            "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": str(int(limits.cpus * 100_000))},
            # No limits: CPU accounting (what the sandbox used) and freezing (consistent snapshots).
            "cpuacct": {},
            "freezer": {},
        }
        dirs = []
        for d in planned:
            _mkdir(d)
            dirs.append(d)
            for fname, value in settings[_controller(d)].items():
                _write(d / fname, value)
        if not any(_controller(d) == "memory" for d in dirs):
            # Without the memory controller the rlimit fallback must stay on.
            for d in dirs:
                d.rmdir()
            raise OSError("no memory controller")
        return cls(dirs)

    def join_script(self) -> str:
        """Shell lines that move the running shell (and so what it execs) into this cgroup."""
        return "".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}; " for d in self.dirs)

    def pids(self) -> list[int]:
        out: set[int] = set()
        for d in self.dirs:
            with contextlib.suppress(OSError):
                out.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        return sorted(out)

    def oom_kills(self) -> int:
        """How many processes the memory limit has killed so far."""
        for d in self.dirs:
            for fname in ("memory.events", "memory.oom_control"):
                f = d / fname
                if f.exists():
                    for line in f.read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
        return 0

    def pids_denied(self) -> int:
        """How many forks the process limit has refused so far."""
        for d in self.dirs:
            f = d / "pids.events"
            if f.exists():
                for line in f.read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "max":
                        return int(value)
        return 0

    def pids_current(self) -> int:
        """Processes and threads alive in the group now (what ``Limits.pids`` bounds)."""
        for d in self.dirs:
            f = d / "pids.current"
            if f.exists():
                try:
                    return int(f.read_text())
                except (OSError, ValueError):
                    return 0
        return len(self.pids())

    def cpu_seconds(self) -> float | None:
        """CPU time every process of the group used so far (None without CPU accounting)."""
        for d in self.dirs:
            try:
                if (d / "cpuacct.usage").exists():
                    return int((d / "cpuacct.usage").read_text()) / 1e9
                if (d / "cpu.stat").exists():
                    for line in (d / "cpu.stat").read_text().splitlines():
                        if line.startswith("usage_usec "):
                            return int(line.split()[1]) / 1e6
            except (OSError, ValueError):
                return None
        return None

    def freeze(self, on: bool) -> bool:
        """Stop (or resume) every process of the group; False when the kernel cannot."""
        for d in self.dirs:
            if (d / "cgroup.freeze").exists():  # v2
                _write(d / "cgroup.freeze", "1" if on else "0")
                return True
            if (d / "freezer.state").exists():  # v1
                _write(d / "freezer.state", "FROZEN" if on else "THAWED")
                return True
        return False

    def kill_all(self, timeout: float = 5.0) -> None:
        kill_file = self.dirs[0] / "cgroup.kill"
        if kill_file.exists():
            _write(kill_file, "1")
        deadline = time.monotonic() + timeout
        while (pids := self.pids()) and time.monotonic() < deadline:
            # Frozen, a fork bomb cannot refill the group between reading it and the kills.
            frozen = self.freeze(True)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if frozen:
                self.freeze(False)
            time.sleep(0.02)

    def remove(self) -> None:
        for _ in range(3):  # a fork bomb can refill the group between a kill pass and rmdir
            self.kill_all()
            for d in self.dirs:
                for _ in range(50):
                    try:
                        d.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.02)
            if not any(d.exists() for d in self.dirs):
                for d in self.dirs:  # the shared parent goes with the last sandbox, so the
                    with contextlib.suppress(OSError):  # caller's own cgroup can be removed
                        d.parent.rmdir()
                return


def _controller(d: Path) -> str:
    """The v1 controller a cgroup folder belongs to (its hierarchy's mount under the root)."""
    return d.relative_to(CGROUP_ROOT).parts[0]


def _mkdir(d: Path) -> None:
    """``mkdir -p``, again if another sandbox's teardown removed the shared parent meanwhile."""
    for attempt in range(3):
        try:
            d.mkdir(parents=True)
            return
        except FileNotFoundError:
            if attempt == 2:
                raise


def _own_cgroup(controller: str) -> str:
    """The caller's cgroup path for ``controller`` (``""``: the unified v2 hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller == "" and names == "") or controller in names.split(","):
            return path
    return "/"


def _parent_v1(controller: str) -> Path:
    """Where a sandbox's v1 cgroup goes: below the caller's own cgroup of that controller,
    so whatever bounds the caller (a service's MemoryMax, a batch job, a container) bounds
    its sandboxes too."""
    return CGROUP_ROOT / controller / _own_cgroup(controller).lstrip("/") / "agentworld"


def _parent_v2() -> Path:
    """Where a sandbox's v2 cgroup goes: ``/agentworld`` at the top. v2 gives no children
    with controllers to a cgroup that holds processes, as the caller's does, so sandboxes
    cannot nest below it there: on a v2 host, bound them with ``Limits`` and the session
    count (docs/security.md)."""
    return CGROUP_ROOT / "agentworld"


def ulimit_script(limits: Limits, *, memory: bool) -> str:
    """The per-process limits (inherited by every descendant) as ``ulimit`` lines of the
    launching shell: no extra process start per sandboxed command. ``memory=True`` adds
    the address-space limit used when the sandbox has no cgroup (only the cgroup's
    ``pids.max`` stops a fork bomb). dash counts file sizes in
    512-byte blocks and memory in KiB; a plain ``ulimit`` sets both limits, then ``-S``
    lowers the soft one (dash ignores ``-H`` for CPU time)."""
    lines = [f"ulimit -t {limits.cpu_seconds + 5}", f"ulimit -St {limits.cpu_seconds}",
             f"ulimit -f {limits.file_size_mb * 2048}", f"ulimit -n {limits.nofile}", "ulimit -c 0"]
    if memory:
        lines.append(f"ulimit -v {limits.memory_mb * 1024}")
    return "".join(f"{line}; " for line in lines)


def _write(path: Path, value: str) -> None:
    # A missing file is an optional knob this kernel does not have (e.g. memory.swap.max without swap).
    with contextlib.suppress(FileNotFoundError):
        path.write_text(value)
