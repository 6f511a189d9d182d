"""One episode's Linux sandbox: overlay over the cached Debian root, run by bwrap.

Layout on the host (one temporary folder per sandbox)::

    <dir>/layer   tmpfs of ``disk_mb``: the overlay's upper and work folders, so an
                  episode can never fill the host disk, and the declared machine's
                  files (``machine.py``), bound over /proc entries and ``uname``
    <dir>/dev     the sandbox's /dev: a small tmpfs with the usual device nodes and a
                  devpts of its own (bwrap's --dev would bind the host's devtmpfs,
                  whose size is half the host's memory, and size its tmpfs by RAM)
    <dir>/lower   a link to the cached rootfs, so the overlay's options (which the
                  sandbox reads in /proc/mounts) name no host path
    <dir>/root    the overlay mount: cached rootfs (read-only lower) + layer/upper

    <dir>/userns  the sandbox's user namespace (an nsfs bind mount): uids 0..65535
                  inside are host uids SANDBOX_UID.. outside
    <dir>/timens  its time namespace, whose boot clock starts at 0 with the sandbox, so
                  process start times are the declared machine's, not the host's uptime

Every process runs under bwrap as root of that user namespace, so it is an ordinary
unprivileged uid on the host: it holds capabilities only over its own namespaces
(none by default, so CapEff is 0; tasks that manage users opt in to
:data:`USER_ADMIN_CAPABILITIES`), none over the host's (/proc/sys, keyrings, other
processes). On top: private network (loopback
only), PID, IPC, UTS, mount, cgroup and time namespaces, a minimal /dev, its own /proc with
the parts that reach kernel state read-only or hidden, no host path mounted, and the
seccomp filter of ``seccomp.py``. Processes join the sandbox's cgroup before exec, so
teardown kills everything the episode started. What the sandbox says about its kernel,
CPUs, memory, load and uptime is the declared :class:`~agentworld.envs.sandbox.machine.Machine`,
never the host's.

Files are written and read through processes inside the sandbox, never by the host
following paths in the overlay: a symlink planted by the episode cannot redirect a
host write.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from agentworld.envs._owner import OWNER_VAR, write_owner
from agentworld.envs._owner import token as owner_token
from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.sandbox.limits import Cgroup, Limits, ulimit_script
from agentworld.envs.sandbox.machine import FIXED_MTIME, Machine, pick_cpus, write_files
from agentworld.envs.sandbox.prereq import check_host
from agentworld.envs.sandbox.rootfs import ID_COUNT, SANDBOX_UID, RootfsSpec, ensure_rootfs, shift_tree, shifted_rootfs
from agentworld.envs.sandbox.seccomp import filter_path
from agentworld.envs.sweep import unmount_below

# Docker's default set, held over the sandbox's own user namespace only and only by
# sandboxes that ask for it (useradd/chown/su tasks): nothing over the host either way.
USER_ADMIN_CAPABILITIES = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
    "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE",
    "CAP_SETFCAP",
)
# /proc entries that change kernel state are read-only binds (their content is global,
# so the host's view is the same; sys/net follows the reader's own network namespace),
# and the two that list the host's tasks read as empty. The rest of what reaches the
# kernel (kcore, kmsg, kpage*, keys...) needs host capabilities the sandbox lacks.
# Each mount costs about a millisecond per sandboxed process, hence the short lists.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
PROC_EMPTY = ("timer_list", "sched_debug")
PREFIX = "aw-sandbox-"
SNAPSHOT_PREFIX = "aw-snapshot-"
SHM = "shm"
"""Folder of the layer shown as /dev/shm."""
DEV_NODES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2", "core": "/proc/kcore", "ptmx": "pts/ptmx"}
"""What bwrap's ``--dev`` makes, here made once per sandbox (see :meth:`Sandbox._make_dev`)."""
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
    pids_full: bool = False
    """The process table is (within two) at ``Limits.pids`` now: new forks fail."""


@dataclass(frozen=True)
class Snapshot:
    """A copy of a sandbox's writable layer; :meth:`Sandbox.fork` starts from it."""

    path: Path
    rootfs: Path
    folder: Path | None = None
    """The temporary folder made to hold ``path`` (removed with it), if any."""

    def delete(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


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
        capabilities: tuple[str, ...] = (),
        machine: Machine | None = None,
        _upper_from: Path | None = None,
    ):
        check_host()
        self.limits = limits or Limits()
        self.machine = machine or Machine.for_limits(self.limits)
        self._cpus = pick_cpus(self.machine.cpus)
        """Host CPUs the sandbox's processes are pinned to (None: all of this process's)."""
        self._machine_binds: dict[str, Path] = {}
        # A fixed allow-list, whoever asks: capabilities come from shipped task templates,
        # and a request that reaches this far with others is refused, not widened.
        extra = sorted(set(capabilities) - set(USER_ADMIN_CAPABILITIES))
        if extra:
            raise ValueError(f"capabilities {extra} are not allowed in a sandbox "
                             f"(allowed: none, or USER_ADMIN_CAPABILITIES)")
        self.capabilities = tuple(capabilities)
        base = rootfs if isinstance(rootfs, Path) else ensure_rootfs(rootfs, build=False)
        self.rootfs = shifted_rootfs(base)
        self.hostname = hostname
        self.env = {"HOME": "/root", "PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "TERM": "xterm-256color",
                    "USER": "root", "SHELL": "/bin/bash", **(env or {})}
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen[bytes]] = []
        self.closed = True  # nothing to tear down until the folder exists
        _check_reachable(Path(base_dir or tempfile.gettempdir()))
        self._owner = owner_token()
        self.dir = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base_dir))
        write_owner(self.dir)  # lets a sweep (agentworld.envs.sweep) spot orphans
        self.dir.chmod(0o711)  # bwrap runs as the sandbox uid and must reach root/
        self.layer = self.dir / "layer"
        self.root = self.dir / "root"
        self.userns = self.dir / "userns"
        self.dev = self.dir / "dev"
        self.timens = self.dir / "timens" if os.path.exists("/proc/self/ns/time") else None  # Linux 5.6+
        self.cgroup: Cgroup | None = None
        self.closed = False
        try:
            self._mount(_upper_from)
            self._make_dev()
            self._machine_binds = write_files(self.machine, self.layer / "machine", SANDBOX_UID)
            if not (self.rootfs / "bin").is_symlink():  # a root without merged /usr has two
                self._machine_binds["/bin/uname"] = self._machine_binds["/usr/bin/uname"]
            self._make_namespaces()
            self.cgroup = Cgroup.create(self.limits, record=self.dir / "cgroup")
            if self.cgroup is None:
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
            os.chown(upper, SANDBOX_UID, SANDBOX_UID)  # the root folder belongs to root inside
        work.mkdir()
        shm = self.layer / SHM
        shm.mkdir()
        os.chown(shm, SANDBOX_UID, SANDBOX_UID)  # root's inside
        shm.chmod(0o1777)  # sticky and world-writable, as /dev/shm is on any machine
        os.utime(shm, (FIXED_MTIME, FIXED_MTIME))  # dated as the rest of /dev
        # nodev: a device node that lands in the layer can never be opened. The folders
        # are named relative to the sandbox's folder: the kernel shows them as given.
        (self.dir / "lower").symlink_to(self.rootfs)
        opts = "nodev,lowerdir=lower,upperdir=layer/upper,workdir=layer/work"
        _check_call(["mount", "-t", "overlay", "overlay", "-o", opts, str(self.root)], cwd=self.dir)

    def _make_dev(self) -> None:
        """The sandbox's /dev, sized and dated by nothing of the host's.

        Host root makes the device nodes (the sandbox cannot: mknod needs host
        privileges) on a tmpfs without ``nodev`` that only this folder reaches, then makes
        it read-only: a flag set outside the sandbox's namespaces, which nothing inside can
        lift. The devpts instance is the sandbox's own, so its terminals are /dev/pts/0..
        whatever the host has open.
        """
        self.dev.mkdir()
        _check_call(["mount", "-t", "tmpfs", "-o", f"size=64k,nr_inodes=64,mode=0755,uid={SANDBOX_UID},"
                     f"gid={SANDBOX_UID},nosuid,noexec", "tmpfs", str(self.dev)])
        for name, (major, minor) in DEV_NODES.items():
            os.mknod(self.dev / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
            (self.dev / name).chmod(0o666)  # past the umask
        for name, target in DEV_LINKS.items():
            (self.dev / name).symlink_to(target)
        for name in ("pts", "shm"):
            (self.dev / name).mkdir()
        _check_call(["mount", "-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=620", "devpts",
                     str(self.dev / "pts")])
        for path in [self.dev, *self.dev.iterdir(), self.dev / "pts" / "ptmx"]:
            # root's inside (host root is nobody there), dated as the declared machine
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
            os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
        _check_call(["mount", "-o", "remount,ro", str(self.dev)])

    def _make_namespaces(self) -> None:
        """Create the user (and time) namespace every process of this sandbox enters and pin them.

        The namespaces are made by the sandbox uid itself (so that uid holds capabilities in
        them and nowhere else); host root then writes the id maps, which an unprivileged
        process could not (it may map only itself), and bind-mounts them so they outlive
        the short-lived creator. The time namespace moves only the boot clock, back by
        the host's uptime: ``ps`` then reads start times against the declared uptime.
        """
        ids = f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups"
        clock = [] if self.timens is None else \
            ["--time", f"--boottime={-int(time.clock_gettime(time.CLOCK_BOOTTIME))}"]
        maker = subprocess.Popen(["setpriv", *ids, "unshare", "--user", *clock, "--", "/bin/sh", "-c", "echo; read x"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if not maker.stdout.readline():  # type: ignore[union-attr]
                raise SandboxUnavailable(f"cannot create a user namespace: {maker.stderr.read().decode().strip()}",  # type: ignore[union-attr]
                                         "enable unprivileged user namespaces (user.max_user_namespaces > 0)")
            for kind in ("uid_map", "gid_map"):
                Path(f"/proc/{maker.pid}/{kind}").write_text(f"0 {SANDBOX_UID} {ID_COUNT}\n")
            self.userns.touch()
            _check_call(["mount", "--bind", f"/proc/{maker.pid}/ns/user", str(self.userns)])
            if self.timens is not None:
                self.timens.touch()
                _check_call(["mount", "--bind", f"/proc/{maker.pid}/ns/time_for_children", str(self.timens)])
        finally:
            maker.stdin.close()  # type: ignore[union-attr]
            maker.wait()

    def adopt(self, path: Path) -> None:
        """Give files the host wrote under ``root`` (before any sandbox process ran) to
        the sandbox's root user, who could not change them otherwise."""
        if not path.resolve().is_relative_to(self.root):
            raise ValueError(f"{path} is not inside this sandbox")
        shift_tree(path)

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
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        unmount_below(self.dir)  # overlay root, layer and /dev tmpfs, devpts, user and time namespaces
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
             tty: bool = False, ro_binds: dict[str, Path] | None = None) -> list[str]:
        """The host command line that runs ``cmd`` inside this sandbox.

        It joins the sandbox's cgroup, applies the per-process rlimits, opens the seccomp
        filter, enters the user namespace (becoming the sandbox uid) and
        execs bwrap, so it
        can be handed to anything that starts processes (tmux panes included: the
        descriptors are opened by the command line itself, not inherited).
        ``tty=True`` keeps the caller's controlling terminal, which job control needs.
        ``ro_binds`` maps sandbox paths to host folders shown read-only there.
        """
        # /dev is read-only (see _make_dev), and /dev/shm is a folder of the layer's tmpfs,
        # so what is put there counts against ``disk_mb`` (and shows in usage()) like any
        # other write.
        timens = [] if self.timens is None else [f"--time={self.timens}"]
        args = ["nsenter", f"--user={self.userns}", *timens, "--", "bwrap", "--seccomp", "9", "--bind", str(self.root), "/",
                "--dev-bind", str(self.dev), "/dev", "--bind", str(self.layer / SHM), "/dev/shm",
                "--proc", "/proc"]
        for name in PROC_READ_ONLY:
            if os.path.exists(f"/proc/{name}"):
                args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
        for name in PROC_EMPTY:
            if os.path.exists(f"/proc/{name}"):
                args += ["--ro-bind", str(self.dev / "null"), f"/proc/{name}"]
        for guest, host in {**self._machine_binds, **(ro_binds or {})}.items():
            args += ["--ro-bind", str(host), guest]
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup",
                 "--hostname", self.hostname, "--die-with-parent", "--clearenv",
                 # The command itself is PID 1: no bwrap helper (and its host paths) in `ps`.
                 "--as-pid-1", "--cap-drop", "ALL"]
        if not tty:
            args.append("--new-session")  # no terminal to inject keystrokes into
        for cap in self.capabilities:
            args += ["--cap-add", cap]
        for k, v in {**self.env, **(env or {})}.items():
            args += ["--setenv", k, v]
        args += ["--chdir", cwd, "--", *cmd]
        join = self.cgroup.join_script() if self.cgroup is not None else ""
        limits = ulimit_script(self.limits, memory=self.cgroup is None)
        opens = f"9<{shlex.quote(str(filter_path()))}"
        # The owner tag lets a sweep find launchers (bwrap) a killed run left; the
        # sandboxed program never sees it (bwrap clears its environment).
        tag = f"export {OWNER_VAR}={self._owner}; "
        if self._cpus is not None:  # so nproc (sched_getaffinity) counts the declared CPUs
            args = ["taskset", "--cpu-list", ",".join(map(str, self._cpus)), *args]
        # nsenter enters the user namespace as its uid 0, i.e. host uid SANDBOX_UID.
        return ["/bin/sh", "-c", f'{join}{limits}{tag}exec "$@" {opens}', "sandbox", *args]

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
            with contextlib.suppress(BrokenPipeError):
                p.stdin.write(input.encode() if isinstance(input, str) else input)  # type: ignore[union-attr]
        p.stdin.close()  # type: ignore[union-attr]
        timed_out = False
        try:
            _wait(p, timeout)
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
        folder = None
        if dest is None:
            folder = Path(tempfile.mkdtemp(prefix=SNAPSHOT_PREFIX, dir=self.dir.parent))
            write_owner(folder)  # swept like a sandbox if we die
            dest = folder / "upper"
        dest = Path(dest)
        frozen = self.cgroup is not None and self.cgroup.freeze(True)
        try:
            _check_call(["cp", "-a", str(self.layer / "upper"), str(dest)])
        except BaseException:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        finally:
            if frozen:
                self.cgroup.freeze(False)  # type: ignore[union-attr]
        return Snapshot(path=dest, rootfs=self.rootfs, folder=folder)

    def fork(self, snapshot: Snapshot | None = None) -> Sandbox:
        """A new sandbox whose files equal this one's now (or ``snapshot``'s)."""
        own = snapshot is None
        snap = snapshot or self.snapshot()
        try:
            return Sandbox(limits=self.limits, rootfs=snap.rootfs, hostname=self.hostname,
                           env=self.env, base_dir=self.dir.parent, capabilities=self.capabilities,
                           machine=self.machine, _upper_from=snap.path)
        finally:
            if own:
                snap.delete()

    def usage(self) -> Usage:
        """Limit hits and disk use so far, for environments to report what was contained."""
        st = os.statvfs(self.layer)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        return Usage(
            oom_kills=self.cgroup.oom_kills() if self.cgroup else 0,
            pids_denied=self.cgroup.pids_denied() if self.cgroup else 0,
            disk_used_mb=used / 2**20,
            disk_full=st.f_bavail * st.f_frsize < 1 << 20,
            pids_full=self.cgroup is not None and self.cgroup.pids_current() >= self.limits.pids - 2,
        )


def _wait(p: subprocess.Popen[bytes], timeout: float | None) -> None:
    """``p.wait(timeout)`` without its polling loop (which sleeps up to 50 ms at a time):
    block on a pidfd until the process ends or the time is up."""
    try:
        fd = os.pidfd_open(p.pid)
    except (AttributeError, OSError):  # old kernel, or already reaped
        p.wait(timeout=timeout)
        return
    try:
        if not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(p.args, timeout or 0)
    finally:
        os.close(fd)
    p.wait()


def _check_reachable(base: Path) -> None:
    """bwrap runs as the sandbox uid, which must be able to walk down to the sandbox."""
    for folder in [base.resolve(), *base.resolve().parents]:
        if not os.stat(folder).st_mode & 0o001:
            raise SandboxUnavailable(f"the sandbox folder {base} is not reachable by the sandbox's uid "
                                     f"({folder} lacks o+x)", f"use another base folder or `chmod o+x {folder}`")


def _check_call(cmd: list[str], cwd: Path | None = None) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise SandboxUnavailable(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}",
                                 "run as root on a kernel with overlayfs and tmpfs")
