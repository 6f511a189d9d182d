"""One episode's Linux sandbox: overlay over the cached Debian root, run by bwrap.

Layout on the host (one temporary folder per sandbox)::

    <dir>/layer   tmpfs of ``disk_mb``: the overlay's upper and work folders, so an
                  episode can never fill the host disk
    <dir>/root    the overlay mount: cached rootfs (read-only lower) + layer/upper

Every process runs under bwrap with private network (loopback only), PID, IPC, UTS and
cgroup namespaces, a hostname, a minimal /dev, its own /proc, no host path mounted,
and the capability set of an ordinary container root (no mount, no raw I/O, no
module loading, no rlimit override). Processes join the sandbox's cgroup before exec,
so teardown kills everything the episode started.

Files are written and read through processes inside the sandbox, never by the host
following paths in the overlay: a symlink planted by the episode cannot redirect a
host write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.sandbox.limits import Cgroup, Limits, prlimit_args
from agentworld.envs.sandbox.prereq import check_host
from agentworld.envs.sandbox.rootfs import RootfsSpec, ensure_rootfs

# Docker's default set: enough for package managers, chown/chmod tasks and kill, not
# enough to mount, load modules, change rlimits or touch the host's devices.
CAPABILITIES = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
    "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_MKNOD",
    "CAP_AUDIT_WRITE", "CAP_SETFCAP",
)
PREFIX = "aw-sandbox-"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class RunResult:
    """What one command did inside the sandbox."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    """Output passed ``Limits.output_bytes``: the rest was dropped and the command stopped."""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class Usage:
    oom_kills: int
    """Processes the memory limit killed."""
    pids_denied: int
    """Forks the process limit refused."""
    disk_used_mb: float
    disk_full: bool


@dataclass(frozen=True)
class Snapshot:
    """A copy of a sandbox's writable layer; :meth:`Sandbox.fork` starts from it."""

    path: Path
    rootfs: Path

    def delete(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class Sandbox:
    """A fresh, isolated Debian machine for one episode. Use as a context manager."""

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        rootfs: Path | RootfsSpec | None = None,
        hostname: str = "sandbox",
        env: dict[str, str] | None = None,
        base_dir: str | Path | None = None,
        _upper_from: Path | None = None,
    ):
        check_host()
        self.limits = limits or Limits()
        self.rootfs = rootfs if isinstance(rootfs, Path) else ensure_rootfs(rootfs, build=False)
        self.hostname = hostname
        self.env = {"HOME": "/root", "PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "TERM": "xterm-256color",
                    "USER": "root", "SHELL": "/bin/bash", **(env or {})}
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen[bytes]] = []
        self.closed = False
        self.dir = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base_dir))
        (self.dir / "owner").write_text(f"{os.getpid()}\n")  # lets sweep_stale() spot orphans
        self.layer = self.dir / "layer"
        self.root = self.dir / "root"
        self.cgroup: Cgroup | None = None
        try:
            self._mount(_upper_from)
            self.cgroup = Cgroup.create(self.limits)
            if self.cgroup is not None:
                (self.dir / "cgroup").write_text("".join(f"{d}\n" for d in self.cgroup.dirs))
            else:
                warnings.warn("cgroups are not writable here: memory is limited per process and the "
                              "process count not at all (run as root with /sys/fs/cgroup writable)",
                              RuntimeWarning, stacklevel=2)
        except BaseException:
            self.close()
            raise

    # -- lifecycle -------------------------------------------------------------------

    def _mount(self, upper_from: Path | None) -> None:
        self.layer.mkdir()
        self.root.mkdir()
        _check_call(["mount", "-t", "tmpfs", "-o", f"size={self.limits.disk_mb}m,mode=0755,nodev", "tmpfs", str(self.layer)])
        upper, work = self.layer / "upper", self.layer / "work"
        if upper_from is not None:
            # cp -a keeps owners, modes, xattrs and the overlay's whiteout devices.
            _check_call(["cp", "-a", str(upper_from), str(upper)])
        else:
            upper.mkdir()
        work.mkdir()
        # nodev: device nodes made inside (CAP_MKNOD keeps mknod working) cannot be opened.
        opts = f"nodev,lowerdir={self.rootfs},upperdir={upper},workdir={work}"
        _check_call(["mount", "-t", "overlay", "overlay", "-o", opts, str(self.root)])

    def close(self) -> None:
        """Kill every process of the sandbox and remove all of its files and mounts."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        for p in self._procs:
            if p.poll() is None:
                p.kill()
        if self.cgroup is not None:
            self.cgroup.remove()
        for p in self._procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for mnt in (self.root, self.layer):
            if os.path.ismount(mnt):
                if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
                    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close()

    # -- processes -------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        """Host path of ``/workspace`` (read it only while no sandbox process runs)."""
        return self.root / "workspace"

    def host_path(self, path: str) -> Path:
        """Host path of a sandbox path (for sockets and read-only inspection)."""
        return self.root / path.lstrip("/")

    def argv(self, cmd: list[str], *, cwd: str = "/workspace", env: dict[str, str] | None = None,
             tty: bool = False) -> list[str]:
        """The host command line that runs ``cmd`` inside this sandbox.

        It joins the sandbox's cgroup, applies the per-process rlimits and execs bwrap,
        so it can be handed to anything that starts processes (tmux panes included).
        ``tty=True`` keeps the caller's controlling terminal, which job control needs.
        """
        args = ["bwrap", "--bind", str(self.root), "/", "--dev", "/dev", "--proc", "/proc",
                "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
                "--hostname", self.hostname, "--die-with-parent", "--clearenv",
                # The command itself is PID 1: no bwrap helper (and its host paths) in `ps`.
                "--as-pid-1", "--cap-drop", "ALL"]
        if not tty:
            args.append("--new-session")  # no terminal to inject keystrokes into
        for cap in CAPABILITIES:
            args += ["--cap-add", cap]
        for k, v in {**self.env, **(env or {})}.items():
            args += ["--setenv", k, v]
        args += ["--chdir", cwd, "--", *cmd]
        join = self.cgroup.join_script() if self.cgroup is not None else ""
        limits = prlimit_args(self.limits, memory=self.cgroup is None)
        return ["/bin/sh", "-c", f'{join}exec prlimit {" ".join(limits)} -- "$@"', "sandbox", *args]

    def spawn(self, cmd: list[str], *, cwd: str = "/workspace", env: dict[str, str] | None = None,
              **popen: object) -> subprocess.Popen[bytes]:
        """Start a long-running process inside the sandbox (killed by :meth:`close`)."""
        if self.closed:
            raise RuntimeError("sandbox is closed")
        popen.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(self.argv(cmd, cwd=cwd, env=env), **popen)  # type: ignore[call-overload]
        self._procs.append(p)
        return p

    def run(self, cmd: str | list[str], *, timeout: float | None = None, input: bytes | str | None = None,
            cwd: str = "/workspace", env: dict[str, str] | None = None) -> RunResult:
        """Run ``cmd`` (a shell string or argv) to completion, within the sandbox's limits.

        A command that outlives ``timeout`` or prints more than ``Limits.output_bytes``
        is killed together with everything it started (its own PID namespace ends).
        """
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else cmd
        timeout = self.limits.wall_seconds if timeout is None else timeout
        t0 = time.monotonic()
        p = self.spawn(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
        cap = self.limits.output_bytes
        bufs: dict[str, bytearray] = {"out": bytearray(), "err": bytearray()}
        over = threading.Event()

        def pump(name: str, stream: object) -> None:
            buf = bufs[name]
            while chunk := stream.read1(65536):  # type: ignore[attr-defined]
                room = cap - len(bufs["out"]) - len(bufs["err"])
                buf += chunk[: max(room, 0)]
                if len(chunk) > room:
                    over.set()
                    p.kill()
                    break

        readers = [threading.Thread(target=pump, args=("out", p.stdout), daemon=True),
                   threading.Thread(target=pump, args=("err", p.stderr), daemon=True)]
        for t in readers:
            t.start()
        if input is not None:
            try:
                p.stdin.write(input.encode() if isinstance(input, str) else input)  # type: ignore[union-attr]
            except BrokenPipeError:
                pass
        p.stdin.close()  # type: ignore[union-attr]
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            p.kill()
            p.wait()
        for t in readers:
            t.join(timeout=5)
        self._procs.remove(p)
        return RunResult(
            exit_code=p.returncode, stdout=bufs["out"].decode(errors="replace"),
            stderr=bufs["err"].decode(errors="replace"), timed_out=timed_out,
            truncated=over.is_set(), duration_s=time.monotonic() - t0,
        )

    # -- files (through the sandbox, so episode symlinks cannot redirect them) ---------

    def write_file(self, path: str, content: str | bytes, *, mode: int | None = None) -> None:
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        if mode is not None:
            script += f' && chmod {mode:o} -- "$1"'
        res = self.run(["/bin/sh", "-c", script, "sh", path], input=content, cwd="/")
        if not res.ok:
            raise OSError(f"cannot write {path} in the sandbox: {res.stderr.strip()}")

    def read_file(self, path: str) -> str:
        res = self.run(["/bin/cat", "--", path], cwd="/")
        if not res.ok:
            raise FileNotFoundError(f"{path}: {res.stderr.strip()}")
        return res.stdout

    # -- state -------------------------------------------------------------------------

    def snapshot(self, dest: str | Path | None = None) -> Snapshot:
        """Copy the writable layer (files only; processes are not part of a snapshot)."""
        dest = Path(dest) if dest else Path(tempfile.mkdtemp(prefix="aw-snapshot-")) / "upper"
        if self.cgroup is not None:
            self._freeze(True)
        try:
            _check_call(["cp", "-a", str(self.layer / "upper"), str(dest)])
        finally:
            if self.cgroup is not None:
                self._freeze(False)
        return Snapshot(path=dest, rootfs=self.rootfs)

    def fork(self, snapshot: Snapshot | None = None) -> Sandbox:
        """A new sandbox whose files equal this one's now (or ``snapshot``'s)."""
        own = snapshot is None
        snap = snapshot or self.snapshot()
        try:
            return Sandbox(limits=self.limits, rootfs=snap.rootfs, hostname=self.hostname,
                           env=self.env, base_dir=self.dir.parent, _upper_from=snap.path)
        finally:
            if own:
                shutil.rmtree(snap.path.parent, ignore_errors=True)

    def usage(self) -> Usage:
        """Limit hits and disk use so far, for environments to report what was contained."""
        st = os.statvfs(self.layer)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        return Usage(
            oom_kills=self.cgroup.oom_kills() if self.cgroup else 0,
            pids_denied=self.cgroup.pids_denied() if self.cgroup else 0,
            disk_used_mb=used / 2**20,
            disk_full=st.f_bavail * st.f_frsize < 1 << 20,
        )

    def _freeze(self, on: bool) -> None:
        # Stop writers while the layer is copied so the copy is consistent (v1 freezer or v2 freeze).
        assert self.cgroup is not None
        for d in self.cgroup.dirs:
            if (d / "cgroup.freeze").exists():
                (d / "cgroup.freeze").write_text("1" if on else "0")
                return


def sweep_stale(base_dir: str | Path | None = None) -> int:
    """Unmount and remove sandboxes whose owning process died without closing them
    (a run killed with SIGKILL leaves its tmpfs, holding RAM, behind). Returns the count."""
    base = Path(base_dir or tempfile.gettempdir())
    swept = 0
    for d in base.glob(f"{PREFIX}*"):
        try:
            owner = int((d / "owner").read_text())
            os.kill(owner, 0)
            continue  # still owned by a live process
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            continue  # not ours to judge (no owner file yet, or unreadable)
        if (d / "tmux.sock").exists():
            subprocess.run(["tmux", "-S", str(d / "tmux.sock"), "kill-server"], capture_output=True)
        if (d / "cgroup").exists():
            Cgroup([Path(x) for x in (d / "cgroup").read_text().split()]).remove()
        for mnt in (d / "root", d / "layer"):
            if os.path.ismount(mnt):
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
        swept += 1
    return swept


def _check_call(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SandboxUnavailable(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}",
                                 "run as root on a kernel with overlayfs and tmpfs")
