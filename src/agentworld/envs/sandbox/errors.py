"""Errors a sandbox raises when the machine cannot run one, each with the fix."""

from __future__ import annotations


class SandboxUnavailable(RuntimeError):
    """A prerequisite is missing (bwrap, debootstrap, root, overlay support, rootfs)."""

    def __init__(self, message: str, fix: str):
        super().__init__(f"{message}; fix: {fix}")
        self.message = message
        self.fix = fix
