"""The Debian root the desktop sandboxes start from: the terminal root's packages plus an
X server, a D-Bus session, AT-SPI and the desktop applications, and pyautogui.

Built once with the sandbox's own ``ensure_rootfs`` (debootstrap, cached, keyed by the
package list and this root's lock file ``rootfs.lock`` beside this module, whose versions
it installs and checks; ``python -m agentworld.envs.os.rootfs --lock`` regenerates it),
then pyautogui and its pure-Python dependencies are installed into it from PyPI on the
host (the sandbox has no network). Everything an episode runs, the X server included,
comes from this root: no host program is visible inside.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from agentworld.envs.sandbox import DEFAULT_PACKAGES, RootfsSpec, SandboxUnavailable, ensure_rootfs

# Keep sorted; the root's folder name hashes this list with the terminal's.
DESKTOP_PACKAGES: tuple[str, ...] = (
    "at-spi2-core", "dbus", "dbus-x11", "fonts-dejavu-core", "galculator", "gir1.2-atspi-2.0",
    "libatk-adaptor", "mousepad", "openbox", "python3-gi", "python3-pyatspi", "python3-xlib",
    "wmctrl", "x11-utils", "xdotool", "xvfb",
)
# Pure-Python wheels, pinned: pyautogui and what it imports on Linux (Xlib comes from Debian).
# Not mouseinfo: it exits when tkinter is missing, and pyautogui runs without it.
PYPI_PACKAGES: tuple[str, ...] = (
    "PyAutoGUI==0.9.54", "pymsgbox==1.0.9", "pytweening==1.2.0", "pyscreeze==1.0.1",
    "pygetwindow==0.0.9", "pyrect==0.2.0", "pyperclip==1.11.0",
)
SPEC = RootfsSpec(packages=tuple(sorted(set(DEFAULT_PACKAGES) | set(DESKTOP_PACKAGES))),
                  lock=Path(__file__).with_name("rootfs.lock"), relock="python -m agentworld.envs.os.rootfs --lock")
SITE = "usr/local/lib/python3.11/dist-packages"
_MARK = ".agentworld-pypi"
_HINT = "run `python -m agentworld.envs.os.rootfs` (root, a Debian mirror and PyPI reachable; a few minutes, once)"


def desktop_rootfs(*, build: bool = False) -> Path:
    """The built desktop root (not yet shifted to the sandbox's uids)."""
    try:
        path = ensure_rootfs(SPEC, build=build, quiet=True)
    except SandboxUnavailable as exc:
        raise SandboxUnavailable(f"the desktop root filesystem is not built yet ({exc.args[0]})", _HINT) from exc
    want = "\n".join(PYPI_PACKAGES) + "\n"
    if _read(path / _MARK) == want:
        return path
    if not build:
        raise SandboxUnavailable(f"pyautogui is missing from the desktop root filesystem {path}", _HINT)
    with open(path.parent / f".{path.name}.pypi.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(path / _MARK) != want:
            with tempfile.TemporaryDirectory() as tmp:
                # --target into a scratch folder, then copied in: pip never touches the root's own files.
                cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                       "--target", tmp, *PYPI_PACKAGES]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise SandboxUnavailable(f"installing pyautogui into the desktop root failed: {r.stderr[-800:]}",
                                             "check that PyPI is reachable, then retry")
                shutil.rmtree(path / SITE, ignore_errors=True)  # nothing left from an older list
                (path / SITE).mkdir(parents=True)
                subprocess.run(["cp", "-a", f"{tmp}/.", str(path / SITE)], check=True)
            (path / _MARK).write_text(want)
            # A new ready stamp: the uid-shifted copy sandboxes use is made again.
            (path / ".agentworld-ready").write_text("ok\n")
    return path


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def main(argv: list[str] | None = None) -> None:
    """``python -m agentworld.envs.os.rootfs [--lock]``: build once (the setup script does)
    or, with ``--lock``, rebuild from the mirror's current versions and rewrite the lock."""
    import argparse

    from agentworld.envs.sandbox.rootfs import relock, shifted_rootfs

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--lock", action="store_true", help=f"regenerate {SPEC.lock}")
    try:
        if parser.parse_args(argv).lock:
            relock(SPEC)
        print(shifted_rootfs(desktop_rootfs(build=True)))
    except SandboxUnavailable as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
