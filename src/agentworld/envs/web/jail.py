"""Chromium inside the project's hardened sandbox (bubblewrap), one jail per browser.

Playwright starts the browser through :attr:`BrowserJail.wrapper`, a generated shell script
that, as host root, moves itself into the jail's cgroup, sets the per-process limits,
enters the sites' loopback-only network namespace and a private mount namespace (where
it binds the workspace on :data:`STAGE`), drops to an unprivileged host uid
(:data:`BROWSER_UID`) and execs ``bwrap`` with:

- a new user, PID, IPC and UTS namespace, ``--cap-drop ALL`` (CapEff 0), ``--new-session``
  (no terminal injection), ``--die-with-parent``;
- the seccomp filter every os sandbox runs under (``envs/sandbox/seccomp.py``, unchanged:
  ``chromium --no-sandbox`` needs none of the calls it denies);
- a filesystem of read-only system folders only (/usr and the few /etc entries Chromium
  reads), a fresh /dev and /proc, and ``/tmp`` = the jail's workspace, the one writable
  place (Playwright's profile and download folders land there; $HOME points there too);
  the host's /root, /home, /work, /var, /tmp and the rest of /etc are not mounted at all.

Chromium's own namespace sandbox cannot nest inside this one, hence ``--no-sandbox``; its
renderers are then confined by this jail, not by their own per-process sandbox.

Limits (``envs/sandbox/limits.py``): the cgroup bounds memory, processes and CPU share of
the whole browser; rlimits bound each process's CPU seconds, file size, open files, data
segment (RLIMIT_DATA: an address-space limit would break V8, which reserves large
ranges up front) and processes of :data:`BROWSER_UID` (RLIMIT_NPROC counts every browser
of the machine together, so it is a backstop; the cgroup bounds one browser).
Playwright's pipes (``--remote-debugging-pipe``, fds 3 and 4) pass through nsenter,
unshare, setpriv and bwrap unchanged.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
import weakref
from pathlib import Path

from agentworld.envs._owner import write_owner
from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.sandbox.limits import Cgroup, Limits, ulimit_script
from agentworld.envs.sandbox.rootfs import ID_COUNT, SANDBOX_UID
from agentworld.envs.sandbox.seccomp import filter_path
from agentworld.envs.sweep import WEB_PREFIX

BROWSER_UID = SANDBOX_UID + ID_COUNT
"""Host uid (and gid) browsers run as: owns nothing on the host, and is outside the os
sandboxes' id range, so their processes never count against each other's RLIMIT_NPROC."""
BROWSER_LIMITS = Limits(memory_mb=3072, pids=512, cpus=1.0, cpu_seconds=3600, file_size_mb=256, nofile=4096)
"""Chromium runs a browser, a GPU-less utility and one renderer per site: more threads and
memory than a shell episode, and it lives for many episodes (CPU seconds per process)."""
NPROC_ALL_BROWSERS = 8192
# Read-only system paths a headless Chromium needs; everything else of the host is absent.
_RO_PATHS = ("/usr", "/etc/fonts", "/etc/ld.so.cache", "/etc/chromium", "/etc/chromium.d", "/etc/ssl",
             "/etc/alternatives", "/etc/localtime", "/etc/nsswitch.conf", "/etc/mime.types")
_MERGED_USR = ("bin", "sbin", "lib", "lib64")
STAGE = "/mnt"
"""Where the launcher's private mount namespace shows the workspace (the host's stays as it is)."""


class BrowserJail:
    """One browser's sandbox: its workspace folder, cgroup and launch wrapper. Call :meth:`close`."""

    def __init__(self, executable: Path, *, netns: str | None = None, limits: Limits = BROWSER_LIMITS,
                 root: str | Path | None = None):
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed", "apt-get install -y bubblewrap")
        if os.geteuid() != 0:
            raise SandboxUnavailable("the browser jail drops to its own uid and joins a cgroup, which needs root",
                                     "run as root (e.g. inside a container or VM)")
        self.limits = limits
        self.netns = netns
        self.dir = Path(tempfile.mkdtemp(prefix=WEB_PREFIX + "jail-", dir=root))
        write_owner(self.dir)  # a sweep after a kill removes the folder
        self.workspace = self.dir / "workspace"
        self.workspace.mkdir(mode=0o700)
        os.chown(self.workspace, BROWSER_UID, BROWSER_UID)
        self.cgroup = Cgroup.create(limits)
        if self.cgroup is not None:  # for a sweep after a kill (envs/sweep.py)
            (self.dir / "cgroup").write_text("".join(f"{d}\n" for d in self.cgroup.dirs))
        self._finalizer = weakref.finalize(self, _remove, self.cgroup, self.dir)
        self.wrapper = self.dir / "chromium"
        self.wrapper.write_text(self.script([str(executable), "--no-sandbox"]) + ' "$@"\n')
        self.wrapper.chmod(0o755)

    def script(self, argv: list[str]) -> str:
        """A ``/bin/sh`` script that runs ``argv`` inside the jail (the wrapper appends ``"$@"``)."""
        lines = ["#!/bin/sh", "set -e"]
        if self.cgroup is not None:
            lines.append(self.cgroup.join_script())
        # Data segment, not address space: see the module docstring.
        lines.append(ulimit_script(self.limits, memory=False)
                     + f"ulimit -d {self.limits.memory_mb * 1024}; "
                     f"prlimit --pid $$ --nproc={NPROC_ALL_BROWSERS}")
        # The filter is opened here, as root: its cached file is not readable by the browser uid.
        lines.append(f"exec 9<{shlex.quote(str(filter_path()))}")
        lines.append(f"exec {shlex.join(self.argv(argv))}")
        return "\n".join(lines)

    def argv(self, argv: list[str]) -> list[str]:
        """The full command (minus the limits the script sets) that runs ``argv`` jailed."""
        enter = ["nsenter", f"--net={self.netns}", "--"] if self.netns else []
        ids = [f"--reuid={BROWSER_UID}", f"--regid={BROWSER_UID}", "--clear-groups", "--inh-caps=-all",
               "--bounding-set=-all"]
        mounts: list[str] = []
        for path in _RO_PATHS:
            if os.path.exists(path):
                mounts += ["--ro-bind", path, path]
        for name in _MERGED_USR:  # Debian 12 merges /bin, /lib... into /usr
            if os.path.islink(f"/{name}"):
                mounts += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        bwrap = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                 "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "browser",
                 *mounts, "--dev", "/dev", "--proc", "/proc", "--bind", STAGE, "/tmp", "--chdir", "/tmp",
                 "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "XDG_CONFIG_HOME", "/tmp/.config",
                 "--setenv", "XDG_CACHE_HOME", "/tmp/.cache", "--remount-ro", "/", "--seccomp", "9"]
        # bwrap's uid may not traverse the folders above the workspace (a private TMPDIR), so
        # root first binds it on STAGE in a mount namespace of the launcher's own.
        stage = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                 f'mount --bind "$0" {STAGE} && exec "$@"', str(self.workspace)]
        # The filter's descriptor is closed before ``argv`` runs.
        return [*enter, *stage, "setpriv", *ids, "--", *bwrap, "--", "/bin/sh", "-c", 'exec 9<&- "$@"', "sh", *argv]

    def pids(self) -> list[int]:
        """Every process of the jail (empty without a cgroup)."""
        return self.cgroup.pids() if self.cgroup is not None else []

    def close(self) -> None:
        self._finalizer()


def _remove(cgroup: Cgroup | None, folder: Path) -> None:
    if cgroup is not None:
        with contextlib.suppress(OSError):
            cgroup.remove()
    shutil.rmtree(folder, ignore_errors=True)


