"""The sites a web episode can reach, each served on loopback under a fixed ``.test`` name.

- ``http://index.test/``: Datasette over a SQLite database built from the Python
  documentation's own object inventory (``objects.inv`` of Debian's ``python3.11-doc``):
  every documented function, class, module, option and page, with full-text search,
  facets, sorting, pagination and the filter and SQL forms;
- ``http://docs.test/``: the Python HTML documentation itself (``python3.11-doc``);
- ``http://miniwob.test/``: the MiniWoB++ task pages the PyPI ``miniwob`` package ships.

The servers and the browser share a network namespace of their own that has only a
loopback interface (``unshare --net``; where namespaces are not allowed, the host's
loopback on free ports), so nothing outside is reachable whatever the browser is told.
The browser maps each name to its server's port (``host_rules``), so recorded URLs never
show a port. Processes are tagged with the owner variable, so a sweep after a kill ends
them (:mod:`agentworld.envs.sweep`); their folder carries an owner record for the same reason.

Each server runs in a jail of its own (:class:`~agentworld.envs.web.jail.Jail`, as the
browser does): host uid :data:`~agentworld.envs.web.jail.SITES_UID`, no capabilities, the
os sandboxes' seccomp filter, an environment of PATH, HOME, TMPDIR and LANG only, a cgroup
(:data:`SITE_LIMITS`) and a read-only filesystem: the system folders, the interpreter's
installation, the site's data (the database, Datasette's template and plugin folders,
shown at :data:`DATA`) and its own empty ``/tmp``. Datasette opens the database immutable
(read-only, no locking) and its SQLite connections refuse any string or blob over
:data:`MAX_VALUE_BYTES`, so a query that builds a huge value fails at once; a query that
still outgrows the cgroup's memory kills only that server, which its jail restarts. A
server's log is a descriptor the host opened: the host never reads a path a server wrote.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentworld.envs._owner import OWNER_VAR, token, write_owner
from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.sandbox.limits import Limits
from agentworld.envs.sweep import WEB_PREFIX
from agentworld.envs.web.jail import PATH, SITES_UID, Jail

DOCS_DIR = Path("/usr/share/doc/python3.11/html")
"""Debian's Python documentation (apt package ``python3.11-doc``)."""
PAGE_SIZE = 10
"""Datasette rows per page: long tables paginate, and a page's tree stays readable."""
SITE_LIMITS = Limits(memory_mb=384, pids=128, cpus=1.0, cpu_seconds=86_400, file_size_mb=256, nofile=1024)
"""Each server's jail: a server lives as long as its sites (a whole collection), so the
per-process CPU seconds are a day; the cgroup's CPU share bounds it meanwhile."""
NPROC_ALL_SITES = 4096
"""RLIMIT_NPROC of :data:`SITES_UID` (every site server of the machine together: a backstop)."""
MAX_VALUE_BYTES = 1_000_000
"""Longest string or blob Datasette's SQLite builds (``SQLITE_LIMIT_LENGTH``); the
database's own values are far shorter."""
DATA = "/data"
"""Where a server sees its site's data folder (read-only)."""
_SITE_ENV = {"PATH": PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
# Inside the jail: run the server again a second after the memory limit (or anything else)
# SIGKILLed it, and end with its exit status otherwise (a server that cannot start fails the start).
_RESTART = ('while :; do "$@" && exit 0 || rc=$?; [ "$rc" -eq 137 ] || exit "$rc"; '
            'echo "killed: restarting" >&2; sleep 1; done')
_PLUGIN = f"""import sqlite3

from datasette import hookimpl


@hookimpl
def prepare_connection(conn):
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, {MAX_VALUE_BYTES})
"""

_ENTRY = re.compile(r"(.+?)\s+(\S+)\s+(-?\d+)\s+?(\S*)\s+(.*)")

# Datasette's own footer prints how long the queries took: a page must not depend on the clock.
_FOOTER = ('Powered by <a href="https://datasette.io/">Datasette</a> &middot; Data source: the object inventory '
           "of Debian's python3.11-doc\n")

INDEX, DOCS, MINIWOB = "index.test", "docs.test", "miniwob.test"
CLONE_NEWNET = 0x40000000
# The namespace's holder: brings its loopback up (SIOCGIFFLAGS / SIOCSIFFLAGS), says so, and
# lives until its stdin closes (its owner exited) or it is killed.
_HOLDER = """
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0))[:18])[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))
print("up", flush=True)
sys.stdin.read()
"""


class SitesUnavailable(RuntimeError):
    """A site cannot be served here; the message says what to install."""


def miniwob_dir() -> Path | None:
    """The MiniWoB++ HTML folder of the installed ``miniwob`` package, if any."""
    try:
        import miniwob
    except ImportError:
        return None
    path = Path(miniwob.__file__).parent / "html"
    return path if (path / "miniwob").is_dir() else None


def missing() -> list[str]:
    """What the sites need and this machine lacks, each with its fix."""
    problems = []
    if not (DOCS_DIR / "objects.inv").is_file():
        problems.append(f"{DOCS_DIR} is missing: apt-get install python3.11-doc")
    if shutil.which("datasette") is None and not _has_module("datasette"):
        problems.append("datasette is not installed: pip install 'agentworld[envs]'")
    if miniwob_dir() is None:
        problems.append("the miniwob package is not installed: pip install 'agentworld[envs]'")
    if shutil.which("bwrap") is None:
        problems.append("the site servers' jail needs bubblewrap: apt-get install -y bubblewrap")
    if os.geteuid() != 0:
        problems.append("the site servers' jail drops to its own uid and joins a cgroup: run as root")
    return problems


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# -- the database --------------------------------------------------------------------------
def read_inventory(path: Path = DOCS_DIR / "objects.inv") -> list[tuple[str, str, str, str]]:
    """(name, kind, uri, display name) of every entry of a Sphinx ``objects.inv`` (version 2)."""
    raw = path.read_bytes()
    header, _, body = raw.partition(b"zlib.\n")
    if b"version 2" not in header:
        raise SitesUnavailable(f"{path}: not a Sphinx version 2 inventory")
    entries = []
    for line in zlib.decompress(body).decode().splitlines():
        # "name domain:role priority uri display": names and display names may hold spaces.
        if not (m := _ENTRY.match(line.rstrip())):
            continue
        name, kind, uri, display = m.group(1), m.group(2), m.group(4), m.group(5)
        if ":" not in kind:
            continue
        uri = uri.replace("$", name) if uri.endswith("$") else uri
        entries.append((name, kind, uri, name if display == "-" else display))
    return entries


def build_database(path: Path, inventory: Path = DOCS_DIR / "objects.inv") -> dict[str, int]:
    """The ``pydocs`` database: ``objects`` (every inventory entry) and ``pages`` (every
    documentation page), with a full-text index Datasette finds by itself."""
    entries = read_inventory(inventory)
    modules = {name for name, kind, _, _ in entries if kind == "py:module"}
    pages: dict[str, str] = {uri: display for name, kind, uri, display in entries if kind == "std:doc"}
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE pages (page TEXT PRIMARY KEY, title TEXT, objects INTEGER)")
        db.execute("CREATE TABLE objects (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, domain TEXT, module TEXT, "
                   "page TEXT REFERENCES pages(page), anchor TEXT, display TEXT)")
        rows = []
        for name, kind, uri, display in sorted(entries):
            page, _, anchor = uri.partition("#")
            module = _module_of(name, modules) if kind.startswith("py:") else None
            rows.append((name, kind, kind.split(":")[0], module, page, anchor or None, display))
        db.executemany("INSERT INTO objects (name, kind, domain, module, page, anchor, display) VALUES (?,?,?,?,?,?,?)", rows)
        counts: dict[str, int] = {}
        for r in rows:
            counts[r[4]] = counts.get(r[4], 0) + 1
        db.executemany("INSERT INTO pages VALUES (?,?,?)",
                       [(p, t, counts.get(p, 0)) for p, t in sorted(pages.items())])
        db.execute("CREATE INDEX objects_kind ON objects(kind)")
        db.execute("CREATE INDEX objects_module ON objects(module)")
        db.execute('CREATE VIRTUAL TABLE objects_fts USING fts5(name, display, content="objects", content_rowid="id")')
        db.execute("INSERT INTO objects_fts (rowid, name, display) SELECT id, name, display FROM objects")
    db.close()
    return {"objects": len(rows), "pages": len(pages)}


def _module_of(name: str, modules: set[str]) -> str | None:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:n])) in modules:
            return prefix
    return None


# -- the servers ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Site:
    host: str
    port: int
    what: str

    @property
    def url(self) -> str:
        return f"http://{self.host}/"


class Sites:
    """The three servers, started together; read-only, so one set serves many browsers.

    Use as a context manager or call :meth:`close`; a garbage-collected or exiting set
    stops its servers too.
    """

    def __init__(self, *, root: str | Path | None = None, ready_timeout_s: float = 60.0):
        if problems := missing():
            raise SitesUnavailable("; ".join(problems))
        self.dir = Path(tempfile.mkdtemp(prefix=WEB_PREFIX, dir=root))
        write_owner(self.dir)
        self._root = root
        self._procs: list[subprocess.Popen[bytes]] = []
        self.jails: dict[str, Jail] = {}
        """Each server's jail, by site name (its cgroup holds the server's processes)."""
        self._finalizer = weakref.finalize(self, _stop, self._procs, self.jails, self.dir)
        try:
            self.netns = self._isolate()
            data = self.dir / "data"  # shown read-only at DATA in Datasette's jail
            for folder in (data, data / "templates", data / "plugins"):
                folder.mkdir(mode=0o755)
            self.stats = build_database(data / "pydocs.db")
            (data / "templates" / "_footer.html").write_text(_FOOTER)
            (data / "plugins" / "limits.py").write_text(_PLUGIN)
            for f in (data / "pydocs.db", data / "templates" / "_footer.html", data / "plugins" / "limits.py"):
                f.chmod(0o644)
            www = miniwob_dir()
            assert www is not None  # checked by missing()
            self.sites = {
                INDEX: self._start(INDEX, "Datasette over the Python documentation index", [
                    sys.executable, "-m", "datasette", "serve", "--immutable", f"{DATA}/pydocs.db", "--host", "127.0.0.1", "--port", "{port}",
                    "--template-dir", f"{DATA}/templates", "--plugins-dir", f"{DATA}/plugins",
                    "--setting", "default_page_size", str(PAGE_SIZE), "--setting", "suggest_facets", "off",
                    "--setting", "sql_time_limit_ms", "2000", "--setting", "max_returned_rows", "200"],
                    readonly={str(data): DATA}),
                DOCS: self._start(DOCS, "the Python 3.11 documentation", _static(DOCS_DIR), readonly={str(DOCS_DIR): str(DOCS_DIR)}),
                MINIWOB: self._start(MINIWOB, "MiniWoB++ task pages", _static(www), readonly={str(www): str(www)}),
            }
            self._wait_ready(ready_timeout_s)
        except BaseException:
            self.close()
            raise

    def _isolate(self) -> str | None:
        """A new network namespace with only loopback, held by a child; None where the host
        does not allow one (the servers then use the host's loopback)."""
        try:
            holder = subprocess.Popen(["unshare", "--net", "--", sys.executable, "-c", _HOLDER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      env=dict(os.environ, **{OWNER_VAR: token()}))
        except OSError:
            return None
        self._procs.append(holder)  # type: ignore[arg-type]
        assert holder.stdout is not None
        if holder.stdout.readline().strip() != b"up":
            holder.wait()
            self._procs.remove(holder)  # type: ignore[arg-type]
            return None
        return f"/proc/{holder.pid}/ns/net"

    def run_inside(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on a thread that has joined the sites' network namespace (the host's
        when there is none): how the host reaches a server."""
        return in_netns(self.netns, fn)

    def _start(self, host: str, what: str, argv: list[str], *, readonly: dict[str, str]) -> Site:
        """Start one server in a jail of its own that shows ``readonly`` (host folder: path inside)."""
        from agentworld.launch import free_port

        # Alone in its namespace, a server can take a fixed port (after the holder: 8001, 8002...).
        port = 8000 + len(self._procs) if self.netns else free_port()
        try:
            jail = Jail("site", uid=SITES_UID, limits=SITE_LIMITS, nproc=NPROC_ALL_SITES, env=_SITE_ENV,
                        netns=self.netns, readonly=_with_python(readonly), hostname=host, root=self._root)
        except SandboxUnavailable as exc:
            raise SitesUnavailable(f"the site servers' jail cannot start: {exc}") from exc
        self.jails[host] = jail
        launcher = jail.dir / "serve"
        served = ["/bin/sh", "-c", _RESTART, "sh", *(a.replace("{port}", str(port)) for a in argv)]
        launcher.write_text(jail.script(served, stay=True))  # a server outlives the thread that started it
        launcher.chmod(0o700)
        log = open(self.dir / f"{host}.log", "wb")  # noqa: SIM115 - the child holds it; closed below
        # The launcher's own environment (bwrap's, as the sweep finds it) is as bare as the server's.
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", OWNER_VAR: token()}
        proc = subprocess.Popen([str(launcher)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd="/", start_new_session=True)
        log.close()
        self._procs.append(proc)
        return Site(host, port, what)

    def _wait_ready(self, timeout_s: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        for site, proc in zip(self.sites.values(), self._procs[-len(self.sites):], strict=True):
            while True:
                if proc.poll() is not None:
                    tail = (self.dir / f"{site.host}.log").read_text(errors="replace")[-1500:]
                    raise SitesUnavailable(f"the {site.what} server exited with {proc.returncode}:\n{tail}")
                with contextlib.suppress(httpx.HTTPError):
                    url = f"http://127.0.0.1:{site.port}/"
                    if self.run_inside(lambda u=url: httpx.get(u, timeout=2).status_code) < 500:
                        break
                if time.monotonic() > deadline:
                    raise SitesUnavailable(f"the {site.what} server was not ready after {timeout_s:.0f} s")
                time.sleep(0.1)

    def host_rules(self) -> str:
        """Chromium ``--host-resolver-rules``: each site name to its port; every other name fails."""
        maps = [f"MAP {s.host}:80 127.0.0.1:{s.port}" for s in self.sites.values()]
        return ", ".join([*maps, "MAP * ~NOTFOUND"])

    def describe(self) -> str:
        """The sites, for the initial state of a trajectory."""
        lines = [f"- {s.url}: {s.what}" for s in self.sites.values()]
        lines.append(f"  (index.test: database pydocs, tables objects ({self.stats['objects']} rows) and pages "
                     f"({self.stats['pages']} rows), {PAGE_SIZE} rows per page)")
        return "Sites reachable from the browser (nothing else is):\n" + "\n".join(lines)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Sites:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


T = TypeVar("T")


def in_netns(path: str | None, fn: Callable[[], T]) -> T:
    """``fn()`` on a thread that joined the network namespace at ``path`` (a thread's
    namespace is its own, so the caller's stays as it was)."""
    if path is None:
        return fn()
    out: dict[str, Any] = {}

    def run() -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {path}")
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            out["error"] = exc
        finally:
            os.close(fd)

    thread = threading.Thread(target=run, name="web-netns")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _static(folder: Path) -> list[str]:
    return [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", str(folder)]


def _with_python(readonly: dict[str, str]) -> dict[str, str]:
    """``readonly`` plus this interpreter's installation (and a virtualenv's base) where it
    lives outside /usr (under /root, say), each shown once at its own place."""
    out = dict(readonly)
    for d in sorted({sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}):
        if os.path.isdir(d):
            out.setdefault(d, d)
    same_place = [s for s, d in out.items() if s == d]
    return {s: d for s, d in out.items()
            if s != d or not any(_under(s, p) for p in ["/usr", *same_place] if p != s)}


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _stop(procs: list[subprocess.Popen[bytes]], jails: dict[str, Jail], folder: Path) -> None:
    for proc in procs:
        if proc.stdin is not None:
            proc.stdin.close()  # the namespace holder's cue
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for jail in jails.values():
        jail.close()  # kills what is left in its cgroup, removes its folder
    shutil.rmtree(folder, ignore_errors=True)
