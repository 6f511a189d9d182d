"""The MCP servers an episode can start, and how each one is launched and confined.

Python servers come from PyPI (pinned in the ``envs`` extra); Node servers are installed
by ``scripts/setup.sh`` with npm, pinned, into :func:`npm_dir` -- nothing is downloaded
at run time. Every server runs under bubblewrap: the host filesystem read-only, the
episode workspace bound read-write at ``/workspace`` (so paths in observations are the
same on every machine and in every run), no network namespace shared with the host, and
CPU-time / file-size limits. The fetch server shares its private loopback with a page
server for the episode's ``/workspace/site`` folder, so it can reach those pages and
nothing else.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

WORKSPACE = "/workspace"
"""Where the episode workspace appears inside every server's sandbox."""
SITE_PORT = 8000
SITE_URL = f"http://localhost:{SITE_PORT}"
"""Base URL of the episode's local pages, as the fetch server sees them."""

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
            description="current time and time-zone conversion",
        ),
        "git": ServerSpec(
            "git", "pypi:mcp-server-git", (py, "-m", "mcp_server_git", "--repository", f"{ws}/repo"),
            env=dict(GIT_ENV, HOME=ws), description=f"a git repository at {ws}/repo",
        ),
        "fetch": ServerSpec(
            "fetch", "pypi:mcp-server-fetch",
            (py, "-m", "agentworld.envs.mcp._fetch_host", f"{ws}/site", str(SITE_PORT)),
            description=f"fetches web pages; the local site is served at {SITE_URL}/",
        ),
        "filesystem": ServerSpec(
            "filesystem", "npm:@modelcontextprotocol/server-filesystem",
            (node, _node_entry("@modelcontextprotocol/server-filesystem"), f"{ws}/files"),
            description=f"file access confined to {ws}/files",
        ),
        "memory": ServerSpec(
            "memory", "npm:@modelcontextprotocol/server-memory",
            (node, _node_entry("@modelcontextprotocol/server-memory")),
            env={"MEMORY_FILE_PATH": f"{ws}/memory.jsonl"},
            description="a knowledge graph of entities, relations and observations",
        ),
        "everything": ServerSpec(
            "everything", "npm:@modelcontextprotocol/server-everything",
            (node, _node_entry("@modelcontextprotocol/server-everything"), "stdio"),
            description="the MCP reference test server",
        ),
        "sequential-thinking": ServerSpec(
            "sequential-thinking", "npm:@modelcontextprotocol/server-sequential-thinking",
            (node, _node_entry("@modelcontextprotocol/server-sequential-thinking")),
            env={"DISABLE_THOUGHT_LOGGING": "true"},
            description="structured step-by-step thinking",
        ),
    }


SERVER_NAMES: tuple[str, ...] = tuple(_specs())


def server_spec(name: str) -> ServerSpec:
    specs = _specs()
    if name not in specs:
        raise KeyError(f"unknown MCP server {name!r} (known: {', '.join(specs)})")
    return specs[name]


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
            module = spec.argv[2]
            if module.startswith("mcp_server") and importlib.util.find_spec(module) is None:
                out.append(f"{name}: {spec.source[5:]} is not installed (pip install -e '.[envs]')")
            elif name == "fetch" and not _readability_js_installed():
                out.append("fetch: readabilipy's JavaScript dependencies are missing "
                           "(run python -m agentworld.envs.mcp.install)")
    if shutil.which("bwrap") is None:
        out.append("bubblewrap (bwrap) is not installed")
    return out


def _readability_js_installed() -> bool:
    import importlib.util

    spec = importlib.util.find_spec("readabilipy")
    return bool(spec and spec.origin and (Path(spec.origin).parent / "javascript" / "node_modules").is_dir())


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 120
    """CPU seconds per server process."""
    file_mb: int = 64
    """Largest file a server may write."""
    open_files: int = 1024


def confined_argv(spec: ServerSpec, workspace: Path, limits: Limits = Limits()) -> list[str]:
    """The command line that runs ``spec`` in a bubblewrap sandbox over ``workspace``."""
    bwrap = shutil.which("bwrap") or "bwrap"
    prlimit = shutil.which("prlimit") or "prlimit"
    return [
        bwrap,
        *_host_root_readonly(),
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        *_python_under_hidden_dirs(),
        "--bind", str(workspace), WORKSPACE,
        "--chdir", WORKSPACE,
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent",
        prlimit, f"--cpu={limits.cpu_s}", f"--fsize={limits.file_mb * 2**20}",
        f"--nofile={limits.open_files}", "--",
        *spec.argv,
    ]


def _host_root_readonly() -> list[str]:
    """Bind every top-level host folder read-only, one by one, so that the sandbox's own
    root stays writable for the ``/workspace`` mount point (a read-only ``/`` would need
    the folder to exist on the host)."""
    args: list[str] = []
    for entry in sorted(os.scandir("/"), key=lambda e: e.name):
        if entry.name in {"proc", "dev", "tmp", "sys", "run", WORKSPACE.strip("/")}:
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry.path), entry.path]
        elif entry.is_dir():
            args += ["--ro-bind", entry.path, entry.path]
    return args


_HIDDEN = ("/tmp", "/run")
"""Host folders the sandbox replaces with its own."""


def _python_under_hidden_dirs() -> list[str]:
    """Read-only binds for this interpreter and its import paths when they live under a
    folder the sandbox hides (a virtualenv or a checkout in /tmp, as CI clones may be):
    without them the Python servers would not find their interpreter or packages."""
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, *sys.path}
    args: list[str] = []
    for path in sorted(p for p in paths if p and os.path.isdir(p)):
        if any(path == h or path.startswith(h + "/") for h in _HIDDEN):
            args += ["--ro-bind", path, path]
    return args


def server_env(spec: ServerSpec) -> dict[str, str]:
    """Environment of a server process: a small fixed base plus the spec's own variables."""
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": WORKSPACE,
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
    }
    if os.environ.get("PYTHONPATH"):
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return base | spec.env
