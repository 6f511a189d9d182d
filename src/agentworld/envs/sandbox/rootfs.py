"""The Debian root filesystem every sandbox starts from.

Made once with ``debootstrap`` and cached under the user cache dir. The folder name
carries a hash of the suite and package list, so changing the list builds a new root
instead of silently reusing a stale one. Concurrent callers wait on a lock file; a
half-built root never becomes visible because the build happens in a temporary folder
that is renamed into place when debootstrap succeeded.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_cache_dir

from agentworld.envs.sandbox.errors import SandboxUnavailable

# What terminal tasks need: shells and editors, build tools, archives, text tools,
# package and process inspection. Keep sorted; the hash covers this list.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "bc", "bzip2", "curl", "file", "gawk", "gcc", "git", "iproute2", "iputils-ping", "jq",
    "less", "libc6-dev", "make", "nano", "patch", "procps", "psmisc", "python3",
    "python3-pip", "sqlite3", "tmux", "tree", "unzip", "vim", "wget", "xz-utils", "zip",
)


@dataclass(frozen=True)
class RootfsSpec:
    """Which root filesystem to build: Debian suite, mirror and extra packages."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: tuple[str, ...] = field(default=DEFAULT_PACKAGES)

    @property
    def key(self) -> str:
        text = "\n".join([self.suite, *sorted(self.packages)])
        return f"debian-{self.suite}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def cache_root() -> Path:
    """Where roots live: ``$AGENTWORLD_ROOTFS_DIR`` or the user cache dir."""
    env = os.environ.get("AGENTWORLD_ROOTFS_DIR")
    return Path(env) if env else Path(user_cache_dir("agentworld")) / "rootfs"


def rootfs_path(spec: RootfsSpec | None = None) -> Path:
    return cache_root() / (spec or RootfsSpec()).key


def is_built(path: Path) -> bool:
    return (path / ".agentworld-ready").exists() and (path / "bin" / "bash").exists()


def ensure_rootfs(spec: RootfsSpec | None = None, *, build: bool = True, quiet: bool = True) -> Path:
    """Return the cached root for ``spec``, building it with debootstrap if ``build``."""
    spec = spec or RootfsSpec()
    path = rootfs_path(spec)
    if is_built(path):
        return path
    if not build:
        raise SandboxUnavailable(
            f"the sandbox root filesystem is not built yet ({path})",
            "run `python -m agentworld.envs.sandbox.rootfs` or `bash scripts/setup.sh` "
            "(needs root, debootstrap and access to a Debian mirror; a few minutes, once)",
        )
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("debootstrap is not installed", "apt-get install -y debootstrap")
    if os.geteuid() != 0:
        raise SandboxUnavailable("building the root filesystem needs root", "run the build once with sudo")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(path):  # another process finished it while we waited
            return path
        tmp = path.parent / f".{spec.key}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(sorted(spec.packages))}",
               spec.suite, str(tmp), spec.mirror]
        proc = subprocess.run(cmd, capture_output=quiet, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout or "")[-2000:] if quiet else ""
            shutil.rmtree(tmp, ignore_errors=True)
            raise SandboxUnavailable(
                f"debootstrap failed (exit {proc.returncode}) {tail}",
                f"check that {spec.mirror} is reachable, then retry",
            )
        _finish(tmp)
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    return path


# Sandboxes run in a user namespace whose uids 0..65535 are host uids SANDBOX_UID.. (see
# sandbox.py): root inside owns nothing on the host. Their lower layer is a copy of the
# root with every owner moved into that range, so root inside still owns "its" files.
SANDBOX_UID = 100_000
ID_COUNT = 65_536
_SHIFTED_MARK = ".agentworld-shifted"


def shifted_rootfs(path: Path, base: int = SANDBOX_UID) -> Path:
    """The copy of root ``path`` whose owners are shifted by ``base`` (made once, cached).

    The copy is keyed by the base and the source's ready stamp: a root rebuilt since (or a
    stale copy from an older layout) is copied again instead of being reused.
    """
    if (path / _SHIFTED_MARK).exists():
        return path  # already a shifted copy
    stamp = f"{base}:{ID_COUNT}:{(path / '.agentworld-ready').stat().st_mtime_ns}\n"
    dest = path.parent / f"{path.name}.uid{base}"
    if _read(dest / _SHIFTED_MARK) == stamp:
        return dest
    if os.geteuid() != 0:
        raise SandboxUnavailable("shifting the root filesystem's owners needs root", "run once as root")
    with open(path.parent / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(dest / _SHIFTED_MARK) == stamp:
            return dest
        tmp = path.parent / f".{dest.name}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        r = subprocess.run(["cp", "-a", str(path), str(tmp)], capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise SandboxUnavailable(f"copying the root filesystem failed: {r.stderr.strip()[-500:]}",
                                     "free disk space in the cache folder and retry")
        _shift_owners(tmp, base)
        (tmp / _SHIFTED_MARK).write_text(stamp)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


def shift_tree(root: Path, base: int = SANDBOX_UID) -> None:
    """Give a host-written tree (before any sandbox process ran) to the sandbox's root."""
    _shift_owners(root, base)


def _shift_owners(root: Path, base: int) -> None:
    # chown clears set-uid/set-gid bits, so modes are put back afterwards.
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, None]:
            p = dirpath if name is None else os.path.join(dirpath, name)
            st = os.lstat(p)
            if st.st_uid >= base and st.st_gid >= base:
                continue
            os.lchown(p, base + st.st_uid % ID_COUNT, base + st.st_gid % ID_COUNT)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                os.chmod(p, stat.S_IMODE(st.st_mode))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _finish(root: Path) -> None:
    """Small fixes that make the root behave like a normal interactive machine."""
    (root / "workspace").mkdir(exist_ok=True)
    (root / "etc" / "hostname").write_text("sandbox\n")
    (root / "etc" / "hosts").write_text("127.0.0.1 localhost\n127.0.1.1 sandbox\n")
    # No resolver inside: there is no network, and lookups should fail at once.
    (root / "etc" / "resolv.conf").unlink(missing_ok=True)
    (root / "etc" / "resolv.conf").write_text("")
    # Package lists so `apt list`, `apt-cache policy` and friends answer offline.
    shutil.rmtree(root / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (root / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (root / ".agentworld-ready").write_text("ok\n")


if __name__ == "__main__":  # `python -m agentworld.envs.sandbox.rootfs`: build once (setup script)
    print(shifted_rootfs(ensure_rootfs(quiet=False)))
