"""The seccomp filter every sandboxed process runs under (handed to ``bwrap --seccomp FD``).

The filter allows by default and answers EPERM to the system calls that reach kernel
state shared with the host or that serve escapes: keyrings, tracing other processes,
BPF and perf, module and kexec loading, mounts and new namespaces (unshare, setns,
clone with namespace flags; bwrap has finished its own before the filter applies), swap, reboot, the clock, handle-based opens and
terminal input injection. Programs see an ordinary "Operation not permitted". Sockets
of families no environment needs (vsock, packet, ...) fail as on a kernel without them.

The compiled BPF is built with libseccomp (``pyseccomp``, a ctypes binding to the
system's libseccomp.so.2) and cached in the user cache folder under a name derived from
the rules, so each sandboxed process costs one ``open`` and nothing is left in /tmp.
"""

from __future__ import annotations

import errno
import hashlib
import os
from functools import cache
from pathlib import Path

from platformdirs import user_cache_dir

# Grouped by why they are denied; every name must be known to libseccomp on x86-64.
DENIED_SYSCALLS: tuple[str, ...] = (
    # host root's keyrings are shared across namespaces
    "keyctl", "add_key", "request_key",
    # reading or stopping other processes (PID 1 included)
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # kernel programs and observability
    "bpf", "perf_event_open", "userfaultfd", "lookup_dcookie", "fanotify_init",
    # kernel code
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    # mounts and namespaces
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr", "unshare", "setns",
    # machine state
    "swapon", "swapoff", "reboot", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "acct", "quotactl", "syslog", "iopl", "ioperm", "vhangup",
    # opening files by handle bypasses the mount tree
    "open_by_handle_at", "name_to_handle_at",
    # io_uring issues work outside the syscall filter
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)
TIOCSTI = 0x5412  # push bytes into a terminal's input queue
# The socket families an environment needs: local sockets, IP over the sandbox's own
# loopback, and netlink (``ip``, ``ss``, glibc's interface lookups). Every other family
# (vsock to the hypervisor, packet, bluetooth, alg, xdp, ...) is kernel surface no task
# uses. Compared as 64-bit values, so a family with high bits set is refused too.
SOCKET_FAMILIES = (1, 2, 10, 16)
"""AF_UNIX, AF_INET, AF_INET6, AF_NETLINK."""
# clone() flags that make new namespaces: a nested user namespace would hand the episode
# a fresh full capability set (and mounts) to attack the kernel with.
CLONE_NS_FLAGS = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000)
"""CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP."""


@cache
def filter_path() -> Path:
    """Path of the compiled filter (BPF), built on first use (atomically) and then reused."""
    rules = repr((DENIED_SYSCALLS, TIOCSTI, CLONE_NS_FLAGS, "clone3-enosys", SOCKET_FAMILIES)).encode()
    folder = Path(user_cache_dir("agentworld")) / "seccomp"
    path = folder / f"filter-{hashlib.sha256(rules).hexdigest()[:16]}.bpf"
    if path.exists():
        return path
    try:
        import pyseccomp as sc
    except ImportError as exc:  # pragma: no cover - the setup installs it
        from agentworld.envs.sandbox.errors import SandboxUnavailable

        raise SandboxUnavailable("the seccomp binding is not installed", "pip install pyseccomp") from exc
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        flt.add_rule(deny, name)
    flt.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, TIOCSTI))
    # What a kernel without the family answers, so programs fall back as they would there.
    no_family = sc.ERRNO(errno.EAFNOSUPPORT)
    for family in _refused_families():
        flt.add_rule(no_family, "socket", family)
        flt.add_rule(no_family, "socketpair", family)
    for flag in CLONE_NS_FLAGS:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory a filter cannot read: "not implemented" makes the
    # C library fall back to clone(), whose flags it can.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        flt.export_bpf(fh)
    os.chmod(tmp, 0o444)
    os.replace(tmp, path)
    return path


def _refused_families() -> list[object]:
    """Argument tests that match every family outside :data:`SOCKET_FAMILIES`: the
    values between the allowed ones one by one, and everything above the largest."""
    import pyseccomp as sc

    allowed = sorted(SOCKET_FAMILIES)
    tests: list[object] = [sc.Arg(0, sc.EQ, v) for v in range(allowed[-1]) if v not in allowed]
    tests.append(sc.Arg(0, sc.GT, allowed[-1]))
    return tests
