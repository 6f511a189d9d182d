"""Launch one MCP server: build its filesystem view as root, then run bwrap as an unprivileged user.

Run as ``python -I -S _confine.py PLAN BWRAP [ARGS...]`` (standard library only, so it
starts fast and imports nothing from the checkout). Why two stages: bwrap must run as an
unprivileged outer user -- run by root, its user namespace maps the sandbox's root to the
host's root. But an unprivileged bwrap can only bind host paths that user can reach,
and the interpreter and packages may sit under ``/root`` (mode 0700), the workspace under
a private temporary folder. So this launcher, still root, opens every source first, then
in a private mount namespace (nothing propagates to the host, and it vanishes with the
server) mounts a small read-only tmpfs holding exactly the sandbox's tree: each source
bound at its place (read-only except the workspace), a few generated ``/etc`` files.
Then it drops to the server user for good (groups, gid, uid; no capability survives),
sets hard resource limits, opens the seccomp filter and execs bwrap, which binds that
tree as ``/`` inside fresh user, PID, IPC, UTS and network namespaces.

PLAN is JSON: ``uid``, ``gid``, ``stage`` (an existing root-owned folder to mount the
tree over), ``binds`` (``[source, dest, writable]``), ``symlinks`` (``[target, dest]``),
``files`` (``{dest: text}``), ``dirs`` (mount points bwrap fills), ``rlimits``
(``{name: value}``), ``seccomp`` (filter path) and ``tag`` (bwrap's own environment: it
names the owner, so a later sweep can tell whose server this is; the server never sees it).
The launcher's environment is the server's environment.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source} on {target}")


def _stage(plan: dict) -> None:
    stage = plan["stage"]
    _check(_libc.unshare(CLONE_NEWNS), "unshare mount namespace")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below reaches the host
    # Open every source before the stage covers anything; bind through the descriptors
    # (opened in this namespace: a bind's source must belong to it).
    binds = [(os.open(src, os.O_PATH | os.O_CLOEXEC), dest, writable, os.path.isdir(src))
             for src, dest, writable in plan["binds"]]
    _mount("agentworld-mcp", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")

    def at(dest: str) -> str:
        return stage + dest

    for dest in plan["dirs"]:
        os.makedirs(at(dest), exist_ok=True)
    for target, dest in plan["symlinks"]:
        os.makedirs(os.path.dirname(at(dest)), exist_ok=True)
        os.symlink(target, at(dest))
    for dest, text in plan["files"].items():
        os.makedirs(os.path.dirname(at(dest)), exist_ok=True)
        with open(at(dest), "w", encoding="utf-8") as fh:
            fh.write(text)
    for fd, dest, writable, is_dir in binds:
        if is_dir:
            os.makedirs(at(dest), exist_ok=True)
        else:
            os.makedirs(os.path.dirname(at(dest)), exist_ok=True)
            os.close(os.open(at(dest), os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{fd}", at(dest), None, MS_BIND)
        # Non-recursive binds: host mounts below a source stay out of the sandbox.
        ro = 0 if writable else MS_RDONLY
        _mount(None, at(dest), None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | ro)
        os.close(fd)
    _mount(None, stage, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755,size=1m")


def _drop(plan: dict) -> None:
    uid, gid = plan["uid"], plan["gid"]
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to another uid: every capability is cleared
    for name, value in plan["rlimits"].items():
        limit = getattr(resource, name)
        resource.setrlimit(limit, (value, value))  # hard too: the server cannot raise them


def main(argv: list[str]) -> None:
    plan = json.loads(argv[1])
    bwrap = argv[2:]
    _stage(plan)
    seccomp = os.open(plan["seccomp"], os.O_RDONLY)  # opened as root: the filter lives in root's cache
    os.set_inheritable(seccomp, True)  # bwrap reads it after exec
    _drop(plan)
    env_args = ["--clearenv"]
    for key, value in os.environ.items():
        env_args += ["--setenv", key, value]
    args = [bwrap[0], "--bind", plan["stage"], "/", *env_args, "--seccomp", str(seccomp), *bwrap[1:]]
    os.execve(args[0], args, plan["tag"])


if __name__ == "__main__":
    try:
        main(sys.argv)
    except OSError as exc:
        print(f"agentworld mcp sandbox: {exc}", file=sys.stderr)
        sys.exit(126)
