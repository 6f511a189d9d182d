"""The MCP servers an episode can start, and how each one is launched and confined.

Python servers come from PyPI (pinned in the ``envs`` extra); Node servers are installed
by ``scripts/setup.sh`` with npm, pinned, into :func:`npm_dir` -- nothing is downloaded
at run time. Every server runs under bubblewrap as the unprivileged user ``nobody``,
with no capabilities and the shared seccomp filter: it sees the system folders, its own
runtime and package read-only, the episode workspace read-write at ``/workspace`` (so
paths in observations are the same on every machine and in every run) and a private
``/tmp``; nothing else of the host, not even its clock: the wall clock reads the
episode's declared time (:mod:`agentworld.envs.clock`). Its network namespace holds only
a loopback, and CPU-time / file-size limits apply. The fetch server shares its private
loopback with a page server for the episode's ``/workspace/site`` folder, so it can
reach those pages and nothing else.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from agentworld.envs.clock import INSTALL_HINT, REAL, Clock, find_library

if TYPE_CHECKING:
    from agentworld.envs.sandbox.limits import Limits as SandboxLimits

WORKSPACE = "/workspace"
"""Where the episode workspace appears inside every server's sandbox."""
SITE_PORT = 8000
SITE_URL = f"http://localhost:{SITE_PORT}"
"""Base URL of the episode's local pages, as the fetch server sees them."""
FETCH_HOST = "/opt/agentworld/fetch_host.py"
"""Where the fetch server's launcher script (``_fetch_host.py``) appears inside its sandbox."""

NPM_VERSIONS = {
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-sequential-thinking": "2026.8.31",
}

# Fixed identity and clock for git, so commit hashes replay identically.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Agent",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Agent",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
    "GIT_AUTHOR_DATE": "2026-01-15T09:00:00+0000",
    "GIT_COMMITTER_DATE": "2026-01-15T09:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class ServerSpec:
    """How to start one MCP server (paths inside the sandbox)."""

    name: str
    source: str
    """``pypi:<dist>`` or ``npm:<package>``: where the server comes from."""
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    runtimes: tuple[str, ...] = ()
    """``python`` (this interpreter's installation) and/or ``node``: what its sandbox binds."""
    binds: tuple[tuple[str, str], ...] = ()
    """Extra host paths the server reads: ``(host path, path inside)``, read-only."""
    clock: Clock = field(default_factory=Clock.of)
    """The wall clock the server sees (timers and durations stay real: they pace its work)."""

    @property
    def npm_package(self) -> str | None:
        return self.source[4:] if self.source.startswith("npm:") else None


def npm_dir() -> Path:
    """Folder whose ``node_modules`` holds the pinned Node servers (``AGENTWORLD_MCP_NPM_DIR``)."""
    env = os.environ.get("AGENTWORLD_MCP_NPM_DIR")
    return Path(env) if env else Path(platformdirs.user_cache_dir("agentworld")) / "mcp-npm"


def _node_entry(package: str) -> str:
    return str(npm_dir() / "node_modules" / package / "dist" / "index.js")


def _specs() -> dict[str, ServerSpec]:
    py = sys.executable
    node = shutil.which("node") or "node"
    ws = WORKSPACE
    return {
        "time": ServerSpec(
            "time", "pypi:mcp-server-time", (py, "-m", "mcp_server_time", "--local-timezone", "UTC"),
            description="current time and time-zone conversion", runtimes=("python",),
        ),
        "git": ServerSpec(
            "git", "pypi:mcp-server-git", (py, "-m", "mcp_server_git", "--repository", f"{ws}/repo"),
            env=dict(GIT_ENV, HOME=ws), description=f"a git repository at {ws}/repo", runtimes=("python",),
        ),
        "fetch": ServerSpec(
            "fetch", "pypi:mcp-server-fetch",
            (py, FETCH_HOST, f"{ws}/site", str(SITE_PORT)),
            description=f"fetches web pages; the local site is served at {SITE_URL}/",
            runtimes=("python", "node"),  # its HTML extractor (readabilipy) runs a Node script
            binds=((str(Path(__file__).with_name("_fetch_host.py")), FETCH_HOST),),
        ),
        "filesystem": ServerSpec(
            "filesystem", "npm:@modelcontextprotocol/server-filesystem",
            (node, _node_entry("@modelcontextprotocol/server-filesystem"), f"{ws}/files"),
            description=f"file access confined to {ws}/files", runtimes=("node",),
        ),
        "memory": ServerSpec(
            "memory", "npm:@modelcontextprotocol/server-memory",
            (node, _node_entry("@modelcontextprotocol/server-memory")),
            env={"MEMORY_FILE_PATH": f"{ws}/memory.jsonl"},
            description="a knowledge graph of entities, relations and observations", runtimes=("node",),
        ),
        "everything": ServerSpec(
            "everything", "npm:@modelcontextprotocol/server-everything",
            (node, _node_entry("@modelcontextprotocol/server-everything"), "stdio"),
            description="the MCP reference test server", runtimes=("node",),
        ),
        "sequential-thinking": ServerSpec(
            "sequential-thinking", "npm:@modelcontextprotocol/server-sequential-thinking",
            (node, _node_entry("@modelcontextprotocol/server-sequential-thinking")),
            env={"DISABLE_THOUGHT_LOGGING": "true"},
            description="structured step-by-step thinking", runtimes=("node",),
        ),
    }


SERVER_NAMES: tuple[str, ...] = tuple(_specs())


def server_spec(name: str, clock: Clock | None = None) -> ServerSpec:
    """How to start server ``name``, on ``clock`` (default: the declared default start)."""
    specs = _specs()
    if name not in specs:
        raise KeyError(f"unknown MCP server {name!r} (known: {', '.join(specs)})")
    return specs[name] if clock is None else replace(specs[name], clock=clock)


def missing_servers(names: list[str] | tuple[str, ...] = SERVER_NAMES) -> list[str]:
    """Servers that cannot start here, each with the reason (empty when all are installed)."""
    import importlib.util

    out = []
    for name in names:
        spec = server_spec(name)
        if spec.npm_package:
            if not Path(spec.argv[1]).is_file():
                out.append(f"{name}: {spec.npm_package} not installed under {npm_dir()} (run scripts/setup.sh)")
            elif shutil.which("node") is None:
                out.append(f"{name}: node is not installed")
        else:
            dist = spec.source[5:]
            if importlib.util.find_spec(dist.replace("-", "_")) is None:
                out.append(f"{name}: {dist} is not installed (pip install -e '.[envs]')")
            elif name == "fetch" and not _readability_js_installed():
                out.append("fetch: readabilipy's JavaScript dependencies are missing "
                           "(run python -m agentworld.envs.mcp.install)")
    if shutil.which("bwrap") is None:
        out.append("bubblewrap (bwrap) is not installed")
    if find_library() is None:
        out.append(f"libfaketime is not installed, so servers cannot get the declared clock: {INSTALL_HINT}")
    if os.geteuid() != 0:
        out.append("MCP sandboxes are built as root before dropping to an unprivileged user: run as root")
    return out


def _readability_js_installed() -> bool:
    import importlib.util

    spec = importlib.util.find_spec("readabilipy")
    return bool(spec and spec.origin and (Path(spec.origin).parent / "javascript" / "node_modules").is_dir())


@dataclass(frozen=True)
class Limits:
    """What an episode's servers may use: per process (rlimits) and all together (one
    cgroup per episode, which the workspace's git setup runs in too)."""

    cpu_s: int = 120
    """CPU seconds per server process."""
    file_mb: int = 64
    """Largest file a server may write."""
    open_files: int = 1024
    tmp_mb: int = 64
    """Size of the server's private ``/tmp`` (memory-backed)."""
    memory_mb: int = 1536
    """All of an episode's server processes together (Node servers take ~60 MB each)."""
    pids: int = 256
    """Processes and threads of an episode's servers alive at once (a Node server runs ~11)."""
    cpus: float = 1.0
    """CPU share of an episode's servers together, in cores."""
    disk_mb: int = 256
    """Size of the episode's workspace (a tmpfs: the servers' writes never reach the host disk)."""

    def cgroup_limits(self) -> SandboxLimits:
        """The episode cgroup's limits, in the sandbox's terms."""
        from agentworld.envs.sandbox.limits import Limits as SandboxLimits

        return SandboxLimits(memory_mb=self.memory_mb, pids=self.pids, cpus=self.cpus)


SERVER_UID = SERVER_GID = 65534
"""The unprivileged host user (``nobody``) every server runs as; workspaces are handed to it."""

_LAUNCHER = Path(__file__).with_name("_confine.py")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Read-only in every sandbox (on merged-/usr systems all but /usr are symlinks)."""
_ETC_BINDS = ("/etc/ld.so.cache", "/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/alternatives")
"""The few host /etc entries servers need: the loader cache, public CA certificates, alternatives."""
# Fixed identity and name resolution: ``localhost`` is the only host name, from a file.
_ETC_FILES = {
    "/etc/passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
                   f"nobody:x:{SERVER_UID}:{SERVER_GID}:nobody:{WORKSPACE}:/usr/sbin/nologin\n",
    "/etc/group": f"root:x:0:\nnogroup:x:{SERVER_GID}:\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
    "/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    "/etc/hostname": "mcp\n",
}
_STAGES = ("/srv", "/media", "/mnt", "/opt")
"""Root-owned host folders the launcher may mount the sandbox tree over, in its private namespace."""


def confined_argv(spec: ServerSpec, workspace: Path, limits: Limits = Limits(),
                  cgroup: tuple[Path, ...] = ()) -> list[str]:
    """The command line that runs ``spec`` confined, over ``workspace`` (see :mod:`._confine`).

    The server runs as :data:`SERVER_UID` with no capabilities, under the shared seccomp
    filter, in new user, PID, IPC, UTS and network namespaces (loopback only). It sees a
    read-only tree holding only the system folders, its runtime and package, a few
    generated ``/etc`` files and ``/workspace`` (the one writable host folder), plus a
    private ``/tmp``, and runs on the spec's clock. The launcher joins the ``cgroup``
    folders first, so the server and everything it starts count against the episode's
    memory, process and CPU limits.
    Run it with :func:`server_env` as its environment.
    """
    clock = _clock_args(spec.clock)
    from agentworld.envs._owner import OWNER_VAR, token
    from agentworld.envs.sandbox.seccomp import filter_path

    ops = ["stage", _stage_dir(), "user", str(SERVER_UID), str(SERVER_GID),
           "seccomp", str(filter_path()), "tag", OWNER_VAR, token()]
    for d in cgroup:
        ops += ["cgroup", str(d)]
    for src, dest in _readonly_binds(spec):
        ops += ["ro", src, dest]
    ops += ["rw", str(workspace), WORKSPACE]
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            ops += ["ln", os.readlink(d), d]
    for dest, text in _ETC_FILES.items():
        ops += ["file", dest, text]
    for d in ("/dev", "/proc", "/tmp"):
        ops += ["dir", d]
    for name, value in (("RLIMIT_CPU", limits.cpu_s), ("RLIMIT_FSIZE", limits.file_mb * 2**20),
                        ("RLIMIT_NOFILE", limits.open_files)):
        ops += ["rlimit", name, str(value)]
    bwrap = [
        shutil.which("bwrap") or "/usr/bin/bwrap",
        "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
        "--unshare-cgroup-try", "--hostname", "mcp",
        "--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc",
        "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/tmp",
        *clock,
        "--chdir", WORKSPACE, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--", *spec.argv,
    ]
    return [sys.executable, "-I", "-S", str(_LAUNCHER), *ops, "--", *bwrap]


def _clock_args(clock: Clock) -> list[str]:
    """bwrap options that give the server ``clock``: set by bwrap for the server alone, so
    the launcher (root, in the host's namespaces) never loads libfaketime itself."""
    library = None if clock.real else find_library()
    if not clock.real and library is None:
        raise RuntimeError(f"libfaketime is not installed, so MCP servers cannot get the declared clock: "
                           f"{INSTALL_HINT}, or opt into the real clock (clock={REAL!r})")
    return [arg for key, value in clock.env(library or "").items() for arg in ("--setenv", key, value)]


def _readonly_binds(spec: ServerSpec) -> list[tuple[str, str]]:
    """Host paths ``spec`` reads, each at the same place inside (plus the spec's own binds)."""
    paths = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    paths += [p for p in _ETC_BINDS if os.path.exists(p)]
    if "python" in spec.runtimes:
        paths += _python_dirs()
    if "node" in spec.runtimes:
        paths += _node_dirs()
    if spec.npm_package:
        paths.append(str(npm_dir()))
    out: list[tuple[str, str]] = []
    for path in paths:
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p, _ in out):
            out.append((path, path))
    return out + [(src, dest) for src, dest in spec.binds]


def _python_dirs() -> list[str]:
    """This interpreter's installation (and its base, for a virtualenv): interpreter, standard
    library and site-packages, wherever they live (under /root or /tmp included)."""
    dirs = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    return sorted(d for d in dirs if d and os.path.isdir(d))


def _node_dirs() -> list[str]:
    """The Node installation's prefix, when node does not come from the system folders."""
    node = shutil.which("node")
    if node is None:
        return []
    return [os.path.dirname(os.path.dirname(os.path.realpath(node)))]


def _stage_dir() -> str:
    for path in _STAGES:
        if os.path.isdir(path) and not os.path.islink(path) and os.stat(path).st_uid == 0:
            return path
    raise RuntimeError(f"none of {', '.join(_STAGES)} is a root-owned folder to build MCP sandboxes on")


def hand_over(workspace: Path) -> None:
    """Give ``workspace`` and everything in it to the servers' user (symlinks not followed)."""
    os.lchown(workspace, SERVER_UID, SERVER_GID)
    for root, dirs, files in os.walk(workspace):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), SERVER_UID, SERVER_GID)


def server_env(spec: ServerSpec) -> dict[str, str]:
    """Environment of a server process: a small fixed base plus the spec's own variables."""
    base = {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": WORKSPACE,
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
    }
    return base | spec.env
