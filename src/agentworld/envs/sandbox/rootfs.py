"""The Debian root filesystem every sandbox starts from.

Made once with ``debootstrap`` and cached under the user cache dir. The folder name
carries a hash of the suite, the package list and the lock file, so changing either
builds a new root instead of silently reusing a stale one. Concurrent callers wait on a
lock file; a half-built root never becomes visible because the build happens in a
temporary folder that is renamed into place when it succeeded.

The lock file (``rootfs.lock`` beside this module: ``package=version``, one installed
package a line) pins what the root holds, so every machine builds the same root from
the live mirror: after debootstrap, any package whose version differs is installed at
its locked version, and the build fails unless the installed set equals the lock. A
mirror that no longer has a locked version (a Debian point release replaced it) fails
the build naming the packages; ``python -m agentworld.envs.sandbox.rootfs --lock``
rebuilds the root from the mirror's current versions and rewrites the lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from platformdirs import user_cache_dir

from agentworld.envs.sandbox.errors import SandboxUnavailable

# What terminal tasks need: shells and editors, build tools, archives, text tools,
# package and process inspection, and libfaketime for the SWE sandbox's declared clock
# (agentworld.envs.clock). Keep sorted; the hash covers this list.
DEFAULT_PACKAGES: tuple[str, ...] = (
    "bc", "bzip2", "curl", "file", "gawk", "gcc", "git", "iproute2", "iputils-ping", "jq",
    "less", "libc6-dev", "libfaketime", "make", "nano", "patch", "procps", "psmisc", "python3",
    "python3-pip", "sqlite3", "tmux", "tree", "unzip", "vim", "wget", "xz-utils", "zip",
)
LOCK = Path(__file__).with_name("rootfs.lock")
RELOCK = "python -m agentworld.envs.sandbox.rootfs --lock"


@dataclass(frozen=True)
class RootfsSpec:
    """Which root filesystem to build: Debian suite, mirror, extra packages and their lock."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    packages: tuple[str, ...] = field(default=DEFAULT_PACKAGES)
    lock: Path | None = LOCK
    """Every package the root holds, at its version; None: whatever the mirror has today."""
    relock: str = RELOCK
    """The command that regenerates ``lock`` (named in errors)."""

    @property
    def key(self) -> str:
        parts = [self.suite, *sorted(self.packages)]
        if self.lock is not None:
            parts.append(f"lock {lock_digest(read_lock(self.lock, self.relock))}")
        text = "\n".join(parts)
        return f"debian-{self.suite}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


# -- the lock ------------------------------------------------------------------------


def read_lock(path: Path, relock: str = RELOCK) -> dict[str, str]:
    """``{package: version}`` from a lock file (``#`` comments and blank lines skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SandboxUnavailable(f"cannot read the root's lock file {path}: {exc.strerror}",
                                 f"restore it from git or regenerate it: `{relock}`") from None
    packages: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("=")
        if not sep or not name or not version or any(c.isspace() for c in line):
            raise SandboxUnavailable(f"{path}:{number}: expected `package=version`, got {raw!r}",
                                     f"fix that line or regenerate the lock: `{relock}`")
        if name in packages:
            raise SandboxUnavailable(f"{path}:{number}: {name} is locked twice",
                                     f"keep one line or regenerate the lock: `{relock}`")
        packages[name] = version
    if not packages:
        raise SandboxUnavailable(f"{path} locks no packages", f"regenerate it: `{relock}`")
    return packages


def lock_digest(packages: dict[str, str]) -> str:
    """What the root's key covers: the locked versions, not the file's comments."""
    text = "".join(f"{name}={version}\n" for name, version in sorted(packages.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def installed_packages(root: Path) -> dict[str, str]:
    """``{package: version}`` of every package installed in ``root``, from its dpkg database."""
    fmt = "${db:Status-Abbrev} ${Package}=${Version}\\n"
    if shutil.which("dpkg-query"):
        cmd = ["dpkg-query", f"--admindir={root / 'var/lib/dpkg'}", "-W", "-f", fmt]
    else:  # a host without dpkg: ask the root's own
        cmd = ["chroot", str(root), "dpkg-query", "-W", "-f", fmt]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SandboxUnavailable(f"cannot list the packages of {root}: {r.stderr.strip()[-500:]}",
                                 "check that it is a built Debian root (or rebuild it)")
    out = {}
    for line in r.stdout.splitlines():
        status, _, entry = line.partition(" ")
        if status.startswith("ii"):  # installed; not removed ones whose configuration stayed
            name, _, version = entry.strip().partition("=")
            out[name] = version
    return out


@dataclass(frozen=True)
class LockDiff:
    """How a root's packages differ from its lock (empty: they match)."""

    missing: dict[str, str] = field(default_factory=dict)
    """Locked, not installed: ``{package: locked version}``."""
    extra: dict[str, str] = field(default_factory=dict)
    """Installed, not locked: ``{package: installed version}``."""
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``{package: (locked, installed)}``."""

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed)

    def describe(self, limit: int = 12) -> str:
        lines = [f"{p} locked at {v} but not installed" for p, v in sorted(self.missing.items())]
        lines += [f"{p} {v} installed but not locked" for p, v in sorted(self.extra.items())]
        lines += [f"{p} locked at {a} but {b} installed" for p, (a, b) in sorted(self.changed.items())]
        more = f"; and {len(lines) - limit} more" if len(lines) > limit else ""
        return "; ".join(lines[:limit]) + more


def compare(locked: dict[str, str], installed: dict[str, str]) -> LockDiff:
    return LockDiff(
        missing={p: v for p, v in locked.items() if p not in installed},
        extra={p: v for p, v in installed.items() if p not in locked},
        changed={p: (v, installed[p]) for p, v in locked.items() if p in installed and installed[p] != v},
    )


def verify_rootfs(root: Path, lock: Path, relock: str = RELOCK) -> LockDiff:
    """How the root at ``root`` differs from ``lock`` (falsy when it matches)."""
    return compare(read_lock(lock, relock), installed_packages(root))


def write_lock(path: Path, packages: dict[str, str], spec: RootfsSpec) -> None:
    header = (
        f"# Debian {spec.suite} root ({len(packages)} packages): every installed package at its version.\n"
        f"# Builds install exactly these from {spec.mirror} and check the result.\n"
        f"# Regenerate from the mirror's current versions (as root; rebuilds the root): {spec.relock}\n"
    )
    body = "".join(f"{name}={version}\n" for name, version in sorted(packages.items()))
    path.write_text(header + body, encoding="utf-8")


# -- building ------------------------------------------------------------------------


def cache_root() -> Path:
    """Where roots live: ``$AGENTWORLD_ROOTFS_DIR`` or the user cache dir."""
    env = os.environ.get("AGENTWORLD_ROOTFS_DIR")
    return Path(env) if env else Path(user_cache_dir("agentworld")) / "rootfs"


def rootfs_path(spec: RootfsSpec | None = None) -> Path:
    return cache_root() / (spec or RootfsSpec()).key


def is_built(path: Path) -> bool:
    return (path / ".agentworld-ready").exists() and (path / "bin" / "bash").exists()


def ensure_rootfs(spec: RootfsSpec | None = None, *, build: bool = True, quiet: bool = True) -> Path:
    """Return the cached root for ``spec``, building it (debootstrap, then the lock) if ``build``."""
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
    _check_can_build()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{spec.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(path):  # another process finished it while we waited
            return path
        tmp = _debootstrap(spec, path.parent / f".{spec.key}.partial", quiet)
        try:
            if spec.lock is not None:
                _install_locked(tmp, spec, quiet)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _finish(tmp)
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    return path


def relock(spec: RootfsSpec | None = None, *, quiet: bool = False) -> Path:
    """Build ``spec``'s root from the mirror's current versions, write them to its lock
    file and cache the root under the key the new lock gives it."""
    spec = spec or RootfsSpec()
    if spec.lock is None:
        raise ValueError("this root has no lock file to write")
    _check_can_build()
    cache_root().mkdir(parents=True, exist_ok=True)
    name = f".relock-{hashlib.sha256(str(spec.lock).encode()).hexdigest()[:12]}"
    with open(cache_root() / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tmp = _debootstrap(spec, cache_root() / f"{name}.partial", quiet)
        write_lock(spec.lock, installed_packages(tmp), spec)
        _finish(tmp)
        path = rootfs_path(spec)
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    return path


def _check_can_build() -> None:
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("debootstrap is not installed", "apt-get install -y debootstrap")
    if os.geteuid() != 0:
        raise SandboxUnavailable("building the root filesystem needs root", "run the build once with sudo")


def _debootstrap(spec: RootfsSpec, tmp: Path, quiet: bool) -> Path:
    """A fresh root in ``tmp``, with the mirror's current versions of ``spec.packages``."""
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
    return tmp


def _install_locked(root: Path, spec: RootfsSpec, quiet: bool) -> None:
    """Bring ``root`` to the versions of ``spec.lock``, then check it matches exactly."""
    assert spec.lock is not None
    locked = read_lock(spec.lock, spec.relock)
    diff = compare(locked, installed_packages(root))
    wanted = sorted(f"{p}={locked[p]}" for p in [*diff.missing, *diff.changed])
    regenerate = f"regenerate the lock from the mirror's current versions: `{spec.relock}` (as root), then commit it"
    if wanted:
        # Through the root's own apt (debootstrap left its package lists and resolver).
        cmd = ["chroot", str(root), "apt-get", "install", "-y", "-q", "--no-install-recommends",
               "--allow-downgrades", *wanted]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if not quiet:
            print(r.stdout, r.stderr, sep="", end="", file=sys.stderr)
        if r.returncode != 0:
            gone = re.findall(r"Version '([^']+)' for '([^']+)' was not found", r.stdout + r.stderr)
            what = ", ".join(f"{p}={v}" for v, p in gone) or f"some of {', '.join(wanted)}"
            raise SandboxUnavailable(
                f"the Debian mirror {spec.mirror} no longer has {what}, locked in {spec.lock} "
                f"(apt-get: {(r.stderr or r.stdout).strip()[-300:]})", regenerate)
    diff = compare(locked, installed_packages(root))
    if diff:
        raise SandboxUnavailable(f"the built root does not match {spec.lock}: {diff.describe()}", regenerate)


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


def main(argv: list[str] | None = None, spec: RootfsSpec | None = None) -> None:
    """``python -m agentworld.envs.sandbox.rootfs [--lock]``: build once (the setup script
    does) or, with ``--lock``, rebuild from the mirror's current versions and rewrite the lock."""
    import argparse

    spec = spec or RootfsSpec()
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--lock", action="store_true", help=f"regenerate {spec.lock}")
    args = parser.parse_args(argv)
    try:
        path = relock(spec) if args.lock else ensure_rootfs(spec, quiet=False)
        print(shifted_rootfs(path))
    except SandboxUnavailable as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
