"""One MCP episode's host resources: a size-capped workspace and a cgroup for its servers.

The workspace is a tmpfs of ``Limits.disk_mb`` mounted in the episode folder, so what
servers write never reaches the host disk and stops at the cap (``disk_full``); the
cgroup bounds the memory, process count and CPU of every server and of the workspace's
git setup together. The folder records the cgroup (``cgroup``) next to its owner
record, so a sweep after a kill removes both (:mod:`agentworld.envs.sweep`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from agentworld.envs.mcp.servers import Limits
from agentworld.envs.sandbox.limits import Cgroup
from agentworld.envs.sweep import unmount_below


@dataclass
class EpisodeFolder:
    folder: Path
    workspace: Path
    cgroup: Cgroup | None

    @classmethod
    def create(cls, folder: Path, limits: Limits) -> EpisodeFolder:
        """Mount the workspace and make the cgroup inside ``folder`` (an owned, empty folder)."""
        workspace = folder / "workspace"
        workspace.mkdir()
        out = cls(folder, workspace, None)
        try:
            mount_tmpfs(workspace, limits.disk_mb)
            out.cgroup = Cgroup.create(limits.cgroup_limits(), record=folder / "cgroup")
            if out.cgroup is None:
                warnings.warn("cgroups are not writable here: MCP servers run with per-process limits only "
                              "(run as root with /sys/fs/cgroup writable)", RuntimeWarning, stacklevel=3)
        except BaseException:
            out.remove()
            raise
        return out

    @property
    def cgroup_dirs(self) -> tuple[Path, ...]:
        return tuple(self.cgroup.dirs) if self.cgroup is not None else ()

    def disk_full(self) -> bool:
        try:
            st = os.statvfs(self.workspace)
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < 1 << 20

    def remove(self) -> None:
        """Kill what is left in the cgroup, unmount the workspace, remove the folder."""
        if self.cgroup is not None:
            self.cgroup.remove()
        unmount_below(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


def mount_tmpfs(path: Path, size_mb: int) -> None:
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755,nodev,nosuid", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        from agentworld.envs.sandbox.errors import SandboxUnavailable

        raise SandboxUnavailable(f"cannot mount the MCP workspace: {r.stderr.strip()}",
                                 "run as root on a kernel with tmpfs")
