"""Checks that this machine can run sandboxes, each failure naming its fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from functools import cache

from agentworld.envs.sandbox.errors import SandboxUnavailable


def check_host() -> None:
    """Raise :class:`SandboxUnavailable` unless bwrap, root and overlayfs are all usable."""
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed", "apt-get install -y bubblewrap")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "sandboxes mount an overlay and a tmpfs per episode, which needs root",
            "run as root (e.g. inside a container or VM) or with sudo",
        )
    if not _overlay_ok():
        raise SandboxUnavailable(
            "this kernel refused an overlayfs mount",
            "load the module (`modprobe overlay`) or run in a container started with --privileged",
        )


@cache
def _overlay_ok() -> bool:
    with open("/proc/filesystems") as fh:
        if "overlay" not in fh.read():
            subprocess.run(["modprobe", "overlay"], capture_output=True)
    with tempfile.TemporaryDirectory(prefix="aw-ovl-check-") as d:
        for sub in ("l", "u", "w", "m"):
            os.mkdir(os.path.join(d, sub))
        opts = f"lowerdir={d}/l,upperdir={d}/u,workdir={d}/w"
        r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o", opts, f"{d}/m"], capture_output=True)
        if r.returncode != 0:
            return False
        subprocess.run(["umount", f"{d}/m"], capture_output=True)
        return True
