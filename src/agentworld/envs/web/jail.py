"""The web environment's sandboxes (bubblewrap): one for each browser and for each site server.

A :class:`Jail` runs its command through a generated shell script that, as host root,
moves itself into the jail's cgroup, sets the per-process limits, enters the sites'
loopback-only network namespace and a private mount namespace (where it stages the
jail's folders on :data:`STAGE`), drops to an unprivileged host uid and execs ``bwrap``
with:

- a new user, PID, IPC and UTS namespace, ``--cap-drop ALL`` (CapEff 0), ``--new-session``
  (no terminal injection), ``--die-with-parent``;
- the seccomp filter every os sandbox runs under (``envs/sandbox/seccomp.py``, unchanged:
  ``chromium --no-sandbox`` and the Python site servers need none of the calls it denies);
- an environment of the jail's own variables only (``--clearenv``): nothing of the host's
  (API keys, tokens, ``AGENTWORLD_*``) reaches the jailed program;
- a filesystem of read-only system folders only (/usr and the few /etc entries Chromium
  and Python read), the jail's read-only extra folders (a site's data, the interpreter
  when it lives outside /usr), a fresh /dev and /proc, and ``/tmp`` = the jail's
  workspace, the one writable place (a browser's Playwright profile and downloads land
  there; $HOME points there too); the host's /root, /home, /work, /var, /tmp and the
  rest of /etc are not mounted at all.

bwrap's uid may not traverse the folders above the workspace or the extra folders (a
private TMPDIR, /root), so root first binds them, in the launcher's own mount namespace,
on a small tmpfs over :data:`STAGE` (the host's stays as it is), and bwrap binds them from
there.

:class:`BrowserJail` runs Chromium (uid :data:`BROWSER_UID`). Chromium's own namespace
sandbox cannot nest inside this one, hence ``--no-sandbox``; its renderers are then
confined by this jail, not by their own per-process sandbox. Playwright starts the
browser through :attr:`BrowserJail.wrapper`; its pipes (``--remote-debugging-pipe``,
fds 3 and 4) pass through nsenter, unshare, setpriv and bwrap unchanged. The site
servers (:mod:`.sites`) run in jails of uid :data:`SITES_UID`, one per server.

Limits (``envs/sandbox/limits.py``): the cgroup bounds memory, processes and CPU share of
the whole jail; rlimits bound each process's CPU seconds, file size, open files, data
segment (RLIMIT_DATA: an address-space limit would break V8, which reserves large
ranges up front, and Python's per-thread malloc arenas) and processes of the jail's uid
(RLIMIT_NPROC counts every jail of that uid on the machine together, so it is a backstop;
the cgroup bounds one jail).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
import weakref
from collections.abc import Mapping
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
SITES_UID = BROWSER_UID + 1
"""Host uid (and gid) the site servers run as: owns nothing, and is not the browsers' uid."""
BROWSER_LIMITS = Limits(memory_mb=3072, pids=512, cpus=1.0, cpu_seconds=3600, file_size_mb=256, nofile=4096)
"""Chromium runs a browser, a GPU-less utility and one renderer per site: more threads and
memory than a shell episode, and it lives for many episodes (CPU seconds per process)."""
NPROC_ALL_BROWSERS = 8192
# Read-only system paths a headless Chromium or a Python server needs; everything else of the host is absent.
_RO_PATHS = ("/usr", "/etc/fonts", "/etc/ld.so.cache", "/etc/chromium", "/etc/chromium.d", "/etc/ssl",
             "/etc/alternatives", "/etc/localtime", "/etc/nsswitch.conf", "/etc/mime.types")
_MERGED_USR = ("bin", "sbin", "lib", "lib64")
STAGE = "/mnt"
"""Where the launcher's private mount namespace stages the jail's folders (the host's stays as it is)."""
PATH = "/usr/local/bin:/usr/bin:/bin"
_BROWSER_ENV = {"PATH": PATH, "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp",
                "XDG_CONFIG_HOME": "/tmp/.config", "XDG_CACHE_HOME": "/tmp/.cache"}


class Jail:
    """One sandbox: its workspace folder, cgroup and launch script. Call :meth:`close`.

    ``uid``: the host uid (and gid) it runs as; ``readonly``: host folders shown read-only,
    each at the path it maps to; ``env``: the jailed program's whole environment; ``nproc``:
    RLIMIT_NPROC, shared by every process of ``uid`` on the machine.
    """

    def __init__(self, name: str, *, uid: int, limits: Limits, nproc: int, env: Mapping[str, str],
                 netns: str | None = None, readonly: Mapping[str, str] | None = None, hostname: str = "jail",
                 root: str | Path | None = None):
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed", "apt-get install -y bubblewrap")
        if os.geteuid() != 0:
            raise SandboxUnavailable("the web jails drop to their own uid and join a cgroup, which needs root",
                                     "run as root (e.g. inside a container or VM)")
        self.uid, self.limits, self.nproc, self.netns, self.hostname = uid, limits, nproc, netns, hostname
        self.env = dict(env)
        self.readonly = dict(readonly or {})
        self.dir = Path(tempfile.mkdtemp(prefix=f"{WEB_PREFIX}{name}-", dir=root))
        write_owner(self.dir)  # a sweep after a kill removes the folder
        self.workspace = self.dir / "workspace"
        self.workspace.mkdir(mode=0o700)
        os.chown(self.workspace, uid, uid)
        # Recorded for a sweep after a kill (envs/sweep.py), before it exists.
        self.cgroup = Cgroup.create(limits, record=self.dir / "cgroup")
        self._finalizer = weakref.finalize(self, _remove, self.cgroup, self.dir)

    def script(self, argv: list[str], *, stay: bool = False) -> str:
        """A ``/bin/sh`` script that runs ``argv`` inside the jail (a wrapper may append ``"$@"``).

        ``stay``: the script's shell stays as bwrap's parent instead of becoming bwrap. bwrap's
        ``--die-with-parent`` follows the *thread* that started it, so a jail started from a
        short-lived thread (a server's) needs a parent of its own; killing that shell kills
        the jail."""
        lines = ["#!/bin/sh", "set -e"]
        if self.cgroup is not None:
            lines.append(self.cgroup.join_script())
        # Data segment, not address space: see the module docstring.
        lines.append(ulimit_script(self.limits, memory=False)
                     + f"ulimit -d {self.limits.memory_mb * 1024}; prlimit --pid $$ --nproc={self.nproc}")
        # The filter is opened here, as root: its cached file is not readable by the jail's uid.
        lines.append(f"exec 9<{shlex.quote(str(filter_path()))}")
        lines.append(("" if stay else "exec ") + shlex.join(self.argv(argv)))
        return "\n".join(lines)

    def argv(self, argv: list[str]) -> list[str]:
        """The full command (minus the limits the script sets) that runs ``argv`` jailed."""
        enter = ["nsenter", f"--net={self.netns}", "--"] if self.netns else []
        ids = [f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--inh-caps=-all",
               "--bounding-set=-all"]
        mounts: list[str] = []
        for path in _RO_PATHS:
            if os.path.exists(path):
                mounts += ["--ro-bind", path, path]
        for name in _MERGED_USR:  # Debian 12 merges /bin, /lib... into /usr
            if os.path.islink(f"/{name}"):
                mounts += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        # Root stages the workspace and the read-only folders on a tmpfs over STAGE, in a mount
        # namespace of the launcher's own: bwrap's uid may not traverse the folders above them.
        stage = [f"mount -t tmpfs -o mode=0755,size=64k aw-stage {STAGE}", f"mkdir {STAGE}/tmp",
                 f"mount --bind {shlex.quote(str(self.workspace))} {STAGE}/tmp"]
        for i, (source, dest) in enumerate(self.readonly.items()):
            stage += [f"mkdir -p {STAGE}/ro/{i}", f"mount -o bind,ro {shlex.quote(source)} {STAGE}/ro/{i}"]
            mounts += ["--ro-bind", f"{STAGE}/ro/{i}", dest]
        env: list[str] = []
        for key, value in self.env.items():
            env += ["--setenv", key, value]
        bwrap = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                 "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", self.hostname,
                 *mounts, "--dev", "/dev", "--proc", "/proc", "--bind", f"{STAGE}/tmp", "/tmp", "--chdir", "/tmp",
                 "--clearenv", *env, "--remount-ro", "/", "--seccomp", "9"]
        staging = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                   " && ".join([*stage, 'exec "$@"']), "stage"]
        # The filter's descriptor is closed before ``argv`` runs.
        return [*enter, *staging, "setpriv", *ids, "--", *bwrap, "--", "/bin/sh", "-c", 'exec 9<&- "$@"', "sh", *argv]

    def pids(self) -> list[int]:
        """Every process of the jail (empty without a cgroup)."""
        return self.cgroup.pids() if self.cgroup is not None else []

    def close(self) -> None:
        self._finalizer()


class BrowserJail(Jail):
    """One browser's sandbox, started through :attr:`wrapper`. Call :meth:`close`."""

    def __init__(self, executable: Path, *, netns: str | None = None, limits: Limits = BROWSER_LIMITS,
                 root: str | Path | None = None):
        super().__init__("jail", uid=BROWSER_UID, limits=limits, nproc=NPROC_ALL_BROWSERS, env=_BROWSER_ENV,
                         netns=netns, hostname="browser", root=root)
        self.wrapper = self.dir / "chromium"
        self.wrapper.write_text(self.script([str(executable), "--no-sandbox"]) + ' "$@"\n')
        self.wrapper.chmod(0o755)


def _remove(cgroup: Cgroup | None, folder: Path) -> None:
    if cgroup is not None:
        with contextlib.suppress(OSError):
            cgroup.remove()
    shutil.rmtree(folder, ignore_errors=True)


