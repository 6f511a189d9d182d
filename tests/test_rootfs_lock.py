"""The sandbox roots' package lock: it parses, keys the cached root, and a built root is checked against it.

Against the real cached roots (built by scripts/setup.sh) and the host's dpkg-query; no
root is built or changed here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentworld.envs.os.rootfs import DESKTOP_PACKAGES
from agentworld.envs.os.rootfs import SPEC as DESKTOP_SPEC
from agentworld.envs.sandbox import SandboxUnavailable
from agentworld.envs.sandbox.rootfs import (
    DEFAULT_PACKAGES,
    LOCK,
    RootfsSpec,
    _install_locked,
    compare,
    installed_packages,
    is_built,
    read_lock,
    rootfs_path,
    verify_rootfs,
    write_lock,
)


def _built(spec: RootfsSpec) -> Path:
    path = rootfs_path(spec)
    if shutil.which("dpkg-query") is None:
        pytest.skip("dpkg-query is not installed here")
    assert is_built(path), f"{path} is not built: run `bash scripts/setup.sh`"
    return path


def test_the_committed_locks_parse_and_cover_the_package_lists() -> None:
    sandbox = read_lock(LOCK)
    assert set(DEFAULT_PACKAGES) <= set(sandbox) and "libfaketime" in sandbox
    assert all(version and " " not in version for version in sandbox.values())
    desktop = read_lock(DESKTOP_SPEC.lock)
    assert set(DESKTOP_PACKAGES) | set(DEFAULT_PACKAGES) <= set(desktop)
    assert set(sandbox) < set(desktop)  # one root is the other plus the desktop


def test_bad_lock_lines_name_the_file_and_line(tmp_path: Path) -> None:
    lock = tmp_path / "rootfs.lock"
    for text, problem in [("# c\nbash=5.2\nbash 5.2\n", ":3: expected `package=version`"),
                          ("bash=5.2\nbash=5.3\n", ":2: bash is locked twice"),
                          ("# only comments\n", "locks no packages")]:
        lock.write_text(text)
        with pytest.raises(SandboxUnavailable, match=problem) as exc:
            read_lock(lock)
        assert str(lock) in str(exc.value) and "--lock" in exc.value.fix
    with pytest.raises(SandboxUnavailable, match="cannot read the root's lock file"):
        read_lock(tmp_path / "missing.lock")


def test_the_cache_key_covers_the_locked_versions_not_the_comments(tmp_path: Path) -> None:
    packages = read_lock(LOCK)
    lock = tmp_path / "rootfs.lock"
    write_lock(lock, packages, RootfsSpec())
    assert read_lock(lock) == packages
    key = RootfsSpec(lock=lock).key
    assert key == RootfsSpec().key  # the same versions: the same root
    lock.write_text("# another comment\n" + lock.read_text())
    assert RootfsSpec(lock=lock).key == key
    write_lock(lock, {**packages, "bash": packages["bash"] + "+local1"}, RootfsSpec())
    assert RootfsSpec(lock=lock).key != key
    assert RootfsSpec(lock=None).key != key


def test_the_cached_roots_match_their_locks() -> None:
    for spec in (RootfsSpec(), DESKTOP_SPEC):
        assert spec.lock is not None
        diff = verify_rootfs(_built(spec), spec.lock)
        assert not diff, diff.describe()


def test_a_root_that_differs_from_its_lock_is_reported_package_by_package(tmp_path: Path) -> None:
    root = _built(RootfsSpec())
    installed = installed_packages(root)
    locked = {**installed, "bash": "0.0-locked", "no-such-package": "1.0"}
    del locked["tree"]
    lock = tmp_path / "rootfs.lock"
    write_lock(lock, locked, RootfsSpec())
    diff = verify_rootfs(root, lock)
    assert diff.changed == {"bash": ("0.0-locked", installed["bash"])}
    assert diff.missing == {"no-such-package": "1.0"} and diff.extra == {"tree": installed["tree"]}
    text = diff.describe()
    assert f"bash locked at 0.0-locked but {installed['bash']} installed" in text
    assert "no-such-package locked at 1.0 but not installed" in text and f"tree {installed['tree']} installed but not locked" in text
    assert not compare(installed, installed)


def test_a_build_fails_naming_what_differs_and_how_to_regenerate(tmp_path: Path) -> None:
    # Only an unlocked package differs, so the build step installs nothing and checks.
    root = _built(RootfsSpec())
    installed = installed_packages(root)
    lock = tmp_path / "rootfs.lock"
    write_lock(lock, {p: v for p, v in installed.items() if p != "tree"}, RootfsSpec())
    spec = RootfsSpec(lock=lock, relock="python -m agentworld.envs.sandbox.rootfs --lock")
    with pytest.raises(SandboxUnavailable, match=f"does not match {lock}: tree .* installed but not locked") as exc:
        _install_locked(root, spec, quiet=True)
    assert "python -m agentworld.envs.sandbox.rootfs --lock" in exc.value.fix
    assert installed_packages(root) == installed
