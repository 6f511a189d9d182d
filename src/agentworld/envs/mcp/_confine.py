"""Launch one MCP server: build its filesystem view as root, then run bwrap as an unprivileged user.

Run as ``python -I -S _confine.py OP... -- BWRAP [ARGS...]`` (standard library only,
and not even json: it runs once per server and per workspace git command, so it starts
in milliseconds and imports nothing from the checkout). Why two stages: bwrap must run as
an unprivileged outer user -- run by root, its user namespace maps the sandbox's root to
the host's root. But an unprivileged bwrap can only bind host paths that user can reach,
and the interpreter and packages may sit under ``/root`` (mode 0700), the workspace under
a private temporary folder. So this launcher, still root, builds the tree in a private
mount namespace (nothing propagates to the host, and it vanishes with the server): a
small read-only tmpfs holding exactly the sandbox's tree, each source bound at its place
(read-only except the workspace), a few generated ``/etc`` files. Then it drops to the
server user for good (groups, gid, uid; no capability survives), sets hard resource
limits, opens the seccomp filter and execs bwrap, which binds that tree as ``/`` inside
fresh user, PID, IPC, UTS and network namespaces.

OPs (each a word and its fixed number of arguments, see :data:`ARITY`): ``stage PATH``
(an existing root-owned folder to mount the tree over), ``user UID GID``, ``ro SRC DEST``,
``rw SRC DEST``, ``ln TARGET DEST``, ``file DEST TEXT``, ``dir DEST`` (a mount point bwrap
fills), ``rlimit NAME VALUE``, ``seccomp PATH`` and ``tag NAME VALUE`` (bwrap's own
environment: it names the owner so a later sweep can tell whose server this is; the
server never sees it), ``cgroup DIR`` (joined first, while still root, so the server and
all it starts count against the episode's limits). The launcher's environment is the
server's environment.
"""

from __future__ import annotations

import ctypes
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


def _enc(s: str | None) -> bytes | None:
    return s.encode() if s is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_enc(source), _enc(target), _enc(fstype), ctypes.c_ulong(flags), _enc(data)),
           f"mount {source} on {target}")


ARITY = {"stage": 1, "user": 2, "ro": 2, "rw": 2, "ln": 2, "file": 2, "dir": 1, "rlimit": 2, "seccomp": 1, "tag": 2,
         "cgroup": 1}


def parse(args: list[str]) -> tuple[dict, list[str]]:
    """The plan the OPs describe, and the bwrap command line after ``--``."""
    plan: dict = {"binds": [], "symlinks": [], "files": {}, "dirs": [], "rlimits": {}, "tag": {}, "cgroups": []}
    i = 0
    while args[i] != "--":
        op, values = args[i], args[i + 1:i + 1 + ARITY[args[i]]]
        i += 1 + ARITY[op]
        if op in ("ro", "rw"):
            plan["binds"].append((values[0], values[1], op == "rw"))
        elif op == "ln":
            plan["symlinks"].append(tuple(values))
        elif op == "file":
            plan["files"][values[0]] = values[1]
        elif op == "cgroup":
            plan["cgroups"].append(values[0])
        elif op == "dir":
            plan["dirs"].append(values[0])
        elif op == "rlimit":
            plan["rlimits"][values[0]] = int(values[1])
        elif op == "tag":
            plan["tag"][values[0]] = values[1]
        elif op == "user":
            plan["uid"], plan["gid"] = int(values[0]), int(values[1])
        else:
            plan[op] = values[0]
    return plan, args[i + 1:]


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
    plan, bwrap = parse(argv[1:])
    for folder in plan["cgroups"]:
        with open(os.path.join(folder, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
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
