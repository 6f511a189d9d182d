"""Isolated Linux machines for real environments (terminal, swe, ...).

``Sandbox`` runs commands in a fresh overlay over a cached Debian root under bwrap,
with resource limits, snapshot and fork, presenting the declared ``Machine`` (kernel,
CPUs, memory) whatever the host; ``ensure_rootfs`` builds that root once.
"""

from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.sandbox.limits import Limits
from agentworld.envs.sandbox.machine import Machine
from agentworld.envs.sandbox.rootfs import DEFAULT_PACKAGES, RootfsSpec, ensure_rootfs, rootfs_path
from agentworld.envs.sandbox.sandbox import RunResult, Sandbox, Snapshot, Usage

__all__ = ["DEFAULT_PACKAGES", "Limits", "Machine", "RootfsSpec", "RunResult", "Sandbox", "SandboxUnavailable", "Snapshot", "Usage",
           "ensure_rootfs", "rootfs_path"]
