"""The web sites' servers (Datasette, ``http.server``) in their jails, tried from outside and
inside: real servers on the sites' loopback, a secret in the starting process's environment,
/proc of every server process read from the host, writes tried as the servers' uid, huge
SQL results through Datasette's JSON API, and the browser still reaching every site."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.envs.web.sites import missing

CHROMIUM = Path("/usr/bin/chromium")
if problems := missing():
    pytest.skip("web prerequisites missing: " + "; ".join(problems), allow_module_level=True)

import httpx  # noqa: E402

from agentworld.envs.web.jail import SITES_UID  # noqa: E402
from agentworld.envs.web.sites import (  # noqa: E402
    DATA,
    DOCS,
    DOCS_DIR,
    INDEX,
    MAX_VALUE_BYTES,
    MINIWOB,
    NPROC_ALL_SITES,
    SITE_LIMITS,
    Sites,
    miniwob_dir,
)

pytestmark = pytest.mark.timeout(300)
CANARY = {"AGENTWORLD_CANARY_KEY": "secret-canary-7f3a", "CANARY_API_TOKEN": "secret-token-91c2"}
ALLOWED_ENV = {"PATH", "HOME", "TMPDIR", "LANG", "PWD"}  # PWD: set by the jail's shell
LIMIT = SITE_LIMITS.memory_mb << 20
# About 100 MB in one value (a million 100-digit numbers), and about 1 GB over 200 rows of six columns.
HUGE_VALUE = ("with recursive c(x) as (select 1 union all select x + 1 from c where x < 1000000) "
              "select group_concat(printf('%0100d', x), '') from c")
HUGE_ROWS = ("with recursive c(x) as (select 1 union all select x + 1 from c where x < 200) select "
             + ", ".join(f"printf('%.*c', {MAX_VALUE_BYTES - 100_000}, 'x') as c{i}" for i in range(6)) + " from c")


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    saved = {k: os.environ.get(k) for k in CANARY}
    os.environ.update(CANARY)
    try:
        with Sites() as s:
            yield s
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def _servers(sites: Sites, host: str) -> list[int]:
    """The Python server processes of one site (its jail's cgroup also holds bwrap and shells)."""
    jail = sites.jails[host]
    assert jail.cgroup is not None, "this host must allow cgroups (root)"
    out = []
    for pid in jail.pids():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(sys.executable.encode()):
                out.append(pid)
        except OSError:  # ended meanwhile
            continue
    return out


def _get(sites: Sites, host: str, path: str, **params: str) -> httpx.Response:
    url = f"http://127.0.0.1:{sites.sites[host].port}{path}"
    return sites.run_inside(lambda: httpx.get(url, params=params, timeout=60))


def _memory_dir(sites: Sites, host: str) -> Path:
    cg = sites.jails[host].cgroup
    assert cg is not None
    return next(d for d in cg.dirs if (d / "memory.max").exists() or (d / "memory.limit_in_bytes").exists())


def _peak(mem: Path) -> int:
    for name in ("memory.peak", "memory.max_usage_in_bytes"):
        if (mem / name).exists():
            return int((mem / name).read_text())
    pytest.skip("this kernel reports no peak memory of a cgroup")


def test_host_secrets_do_not_reach_the_site_servers(sites: Sites) -> None:
    for host in (INDEX, DOCS, MINIWOB):
        pids = sites.jails[host].pids()
        assert _servers(sites, host), host
        for pid in pids:  # bwrap and the jail's shells too, not only the servers
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert not any(v.encode() in environ for v in CANARY.values()), (host, pid)
            assert b"_KEY=" not in environ and b"_TOKEN=" not in environ, (host, pid)
        for pid in _servers(sites, host):
            env = dict(v.split("=", 1) for v in Path(f"/proc/{pid}/environ").read_text().split("\0") if v)
            assert set(env) <= ALLOWED_ENV, (host, sorted(env))
            assert env["HOME"] == "/tmp" and not any(k.startswith("AGENTWORLD_") for k in env), (host, env)


def test_site_servers_do_not_run_as_host_root(sites: Sites) -> None:
    for host in (INDEX, DOCS, MINIWOB):
        for pid in _servers(sites, host):
            status = _status(pid)
            assert status["Uid"].split() == [str(SITES_UID)] * 4, (host, status["Uid"])
            assert status["Gid"].split() == [str(SITES_UID)] * 4, (host, status["Gid"])
            assert status["Groups"].strip() == "", (host, status["Groups"])
            assert status["CapEff"] == status["CapBnd"] == "0000000000000000", (host, status["CapEff"])
            assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1", (host, status["Seccomp"])


def test_site_servers_cannot_outgrow_their_cgroup_or_rlimits(sites: Sites) -> None:
    groups = set()
    for host in (INDEX, DOCS, MINIWOB):
        jail = sites.jails[host]
        assert jail.cgroup is not None
        assert set(_servers(sites, host)) <= set(jail.pids())
        groups.add(tuple(jail.cgroup.dirs))
        mem = _memory_dir(sites, host)
        memory_file = mem / ("memory.max" if (mem / "memory.max").exists() else "memory.limit_in_bytes")
        assert int(memory_file.read_text()) == LIMIT, host
        pids_dir = next(d for d in jail.cgroup.dirs if (d / "pids.max").exists())
        assert (pids_dir / "pids.max").read_text().strip() == str(SITE_LIMITS.pids), host
        for pid in _servers(sites, host):
            limits = Path(f"/proc/{pid}/limits").read_text()
            assert f"Max data size             {LIMIT}" in limits, limits
            assert f"Max processes             {NPROC_ALL_SITES}" in limits, limits
            assert f"Max open files            {SITE_LIMITS.nofile}" in limits, limits
    assert len(groups) == 3  # one cgroup per server: one cannot starve the others


def test_site_servers_cannot_write_their_data_or_the_host(sites: Sites, tmp_path: Path) -> None:
    www = miniwob_dir()
    assert www is not None
    targets = [f"{DATA}/aw-escape", f"{DATA}/templates/aw-escape", f"{DATA}/plugins/aw-escape.py", f"{DOCS_DIR}/aw-escape",
               f"{www}/aw-escape", f"{sys.prefix}/aw-escape", "/usr/aw-escape", "/etc/aw-escape", "/aw-escape",
               f"{sites.dir}/aw-escape", "/work/aw-escape", "/root/aw-escape"]
    probe = textwrap.dedent(f"""
        import os, sqlite3, sys
        def attempt(what, fn):
            try:
                fn()
                print(what, "ALLOWED")
            except (OSError, sqlite3.Error) as exc:
                print(what, "denied", type(exc).__name__)
        for path in {targets!r}:
            attempt("create " + path, lambda p=path: os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)))
        attempt("open db", lambda: os.close(os.open("{DATA}/pydocs.db", os.O_RDWR)))
        attempt("chmod db", lambda: os.chmod("{DATA}/pydocs.db", 0o666))
        def insert():
            db = sqlite3.connect("{DATA}/pydocs.db")
            db.execute("DELETE FROM objects")
            db.commit()
        attempt("sqlite write", insert)
        attempt("host folder", lambda: os.listdir("{sites.dir}"))
        with open("/tmp/aw-inside", "w") as fh:
            fh.write("inside")
        print("visible", sorted(os.listdir("/")))
    """)
    jail = sites.jails[INDEX]
    script = tmp_path / "probe"
    script.write_text(jail.script([sys.executable, "-c", probe]))
    script.chmod(0o755)
    out = subprocess.run([str(script)], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "ALLOWED" not in out.stdout, out.stdout
    assert out.stdout.count("denied") == len(targets) + 4, out.stdout
    assert "sqlite write denied OperationalError" in out.stdout, out.stdout
    visible = eval(out.stdout.split("visible ", 1)[1])  # noqa: S307 - a list of names printed above
    assert "data" in visible and "work" not in visible and "home" not in visible and "var" not in visible
    assert (jail.workspace / "aw-inside").read_text() == "inside"  # /tmp is the jail's own folder
    assert not Path("/tmp/aw-inside").exists()
    assert sorted(p.name for p in (sites.dir / "data").iterdir()) == ["plugins", "pydocs.db", "templates"]
    # The running Datasette sees its data read-only and opened it immutable.
    (pid,) = _servers(sites, INDEX)
    mounts = {line.split()[4]: line.split()[5] for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()}
    assert mounts[DATA].split(",")[0] == "ro" and mounts["/"].split(",")[0] == "ro", mounts
    assert _get(sites, INDEX, "/-/databases.json").json()[0]["is_mutable"] is False


def test_a_huge_sql_result_cannot_grow_datasette_past_its_limit(sites: Sites) -> None:
    mem = _memory_dir(sites, INDEX)
    # One value of about 100 MB: SQLite refuses to build it.
    refused = _get(sites, INDEX, "/pydocs.json", sql=HUGE_VALUE)
    assert refused.status_code == 400 and "string or blob too big" in refused.json()["error"], refused.text[:300]
    assert _peak(mem) < 200 << 20
    # About 1 GB over 200 rows of values just under the limit: refused or killed, never beyond the limit.
    try:
        wide = _get(sites, INDEX, "/pydocs.json", sql=HUGE_ROWS)
        assert wide.status_code >= 500, wide.text[:300]
    except httpx.HTTPError:
        pass  # the memory limit killed the server mid-answer
    assert _peak(mem) <= LIMIT
    for pid in _servers(sites, INDEX):
        assert int(_status(pid)["VmRSS"].split()[0]) << 10 <= LIMIT
    deadline = time.monotonic() + 30  # the jail restarts a server the limit killed
    while True:
        try:
            if _get(sites, INDEX, "/pydocs.json", sql="select 1").json()["rows"] == [[1]]:
                break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert _get(sites, DOCS, "/library/json.html").status_code == 200  # the other servers never noticed


def test_a_server_the_memory_limit_kills_comes_back(sites: Sites) -> None:
    (before,) = _servers(sites, DOCS)
    os.kill(before, signal.SIGKILL)  # what the cgroup's OOM killer does
    deadline = time.monotonic() + 30
    while True:
        try:
            if _get(sites, DOCS, "/library/json.html").status_code == 200:
                break
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    (after,) = _servers(sites, DOCS)
    assert after != before and _status(after)["Uid"].split()[0] == str(SITES_UID)
    assert "killed: restarting" in (sites.dir / f"{DOCS}.log").read_text()


def test_sites_started_on_a_thread_outlive_it() -> None:
    # bwrap's --die-with-parent follows the thread that forked it: a jail's shell stays its parent.
    box: dict[str, Sites] = {}
    thread = threading.Thread(target=lambda: box.setdefault("sites", Sites()))
    thread.start()
    thread.join()
    with box["sites"] as s:
        time.sleep(0.5)
        assert all(p.poll() is None for p in s._procs[1:])
        assert _get(s, DOCS, "/").status_code == 200


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is missing (apt-get install chromium)")
def test_the_browser_reaches_every_jailed_site_and_no_host_secret(sites: Sites) -> None:
    from agentworld.envs.web.browser import Browser

    os.environ.update(CANARY)  # Playwright hands the wrapper this process's environment
    browser = Browser(sites.host_rules(), netns=sites.netns)
    try:
        def visit() -> list[str]:
            page = browser.browser.new_context().new_page()
            titles = []
            for url in ("http://index.test/pydocs/objects", "http://docs.test/library/json.html",
                        "http://miniwob.test/miniwob/click-test.html"):
                page.goto(url, wait_until="load")
                titles.append(page.title())
            return titles

        titles = browser.call(visit)
        assert "objects" in titles[0] and titles[1].startswith("json") and titles[2], titles
        assert browser.jail is not None
        chromium = [p for p in browser.jail.pids() if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"/usr/lib/chromium/")]
        assert chromium
        for pid in browser.jail.pids():  # the jail's launcher included: its uid could read it
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert not any(v.encode() in environ for v in CANARY.values()), pid
            if pid in chromium:
                assert b"AGENTWORLD_" not in environ, pid
    finally:
        browser.close()
