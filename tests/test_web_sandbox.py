"""The web browser's jail from the outside and the inside: a real Chromium (Debian's) in
bubblewrap, probed through pages (file:// and fetch) and, from the host side, through
/proc of its processes; a shell probe in the same jail tries writes and kernel state."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from agentworld.envs.web.sites import missing

CHROMIUM = Path("/usr/bin/chromium")
if problems := missing() + ([] if CHROMIUM.exists() else ["chromium is missing (apt-get install chromium)"]):
    pytest.skip("web prerequisites missing: " + "; ".join(problems), allow_module_level=True)

from agentworld.envs.web import Sites  # noqa: E402
from agentworld.envs.web.browser import Browser  # noqa: E402
from agentworld.envs.web.jail import BROWSER_LIMITS, BROWSER_UID, NPROC_ALL_BROWSERS  # noqa: E402

pytestmark = pytest.mark.timeout(300)
HOST_FILES = ("/etc/hostname", "/etc/passwd", __file__)
"""Readable by any uid on the host; none may be readable from a page."""


@pytest.fixture(scope="module")
def browser():
    with Sites() as sites:
        b = Browser(sites.host_rules(), netns=sites.netns)
        yield b
        b.close()


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def _chromium_pids(browser: Browser) -> list[int]:
    assert browser.jail is not None and browser.jail.cgroup is not None, "this host must allow cgroups (root)"
    out = []
    for pid in browser.jail.pids():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/usr/lib/chromium/"):
                out.append(pid)
        except OSError:  # ended meanwhile
            continue
    return out


def test_pages_cannot_read_host_files(browser: Browser) -> None:
    def probe() -> list[str]:
        context = browser.browser.new_context()
        try:
            page = context.new_page()
            seen = []
            for path in HOST_FILES:
                try:
                    page.goto(f"file://{path}", wait_until="load", timeout=5000)
                    seen.append(page.content())
                except Exception as exc:  # noqa: BLE001 - Playwright's navigation error is the expected answer
                    seen.append(f"error: {exc}")
            # From a page's own script: fetch of a file URL (blocked by the browser before the jail).
            page = context.new_page()
            page.goto("data:text/html,<p>probe</p>")
            seen.append(page.evaluate("""async () => { try { return await (await fetch('file:///etc/passwd')).text(); }
                                         catch (e) { return 'error: ' + e; } }"""))
            return seen
        finally:
            context.close()

    seen = browser.call(probe)
    for path, text in zip(HOST_FILES, seen, strict=False):
        assert "ERR_FILE_NOT_FOUND" in text, (path, text[:300])
    assert seen[-1].startswith("error:"), seen[-1][:300]
    assert "root:x:0:0" not in "".join(seen) and "HOST_FILES" not in "".join(seen)


def test_browser_processes_run_confined(browser: Browser) -> None:
    browser.call(lambda: browser.browser.new_context().new_page().goto("http://docs.test/"))
    pids = _chromium_pids(browser)
    assert len(pids) >= 3, pids  # the browser, its zygote, at least one renderer
    cmdlines = [Path(f"/proc/{p}/cmdline").read_bytes() for p in pids]
    assert any(b"--type=renderer" in c for c in cmdlines)
    assert any(b"--no-sandbox" in c and b"--type=" not in c for c in cmdlines)  # the browser process
    for pid in pids:
        status = _status(pid)
        assert status["CapEff"] == "0000000000000000", (pid, status["CapEff"])
        assert status["CapBnd"] == "0000000000000000", (pid, status["CapBnd"])
        assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1", (pid, status["Seccomp"])
        assert status["Uid"].split()[0] == str(BROWSER_UID)
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert f"Max data size             {BROWSER_LIMITS.memory_mb << 20}" in limits, limits
        assert f"Max processes             {NPROC_ALL_BROWSERS}" in limits, limits
        assert f"Max cpu time              {BROWSER_LIMITS.cpu_seconds}" in limits, limits
        assert f"Max open files            {BROWSER_LIMITS.nofile}" in limits, limits
    # The whole tree shares one cgroup with the memory and process limits set.
    cg = browser.jail.cgroup  # type: ignore[union-attr]
    values = {d.relative_to(Path('/sys/fs/cgroup')).parts[0]: d for d in cg.dirs}
    if "memory" in values and (values["memory"] / "memory.limit_in_bytes").exists():
        assert int((values["memory"] / "memory.limit_in_bytes").read_text()) == BROWSER_LIMITS.memory_mb << 20
    pids_dir = next((d for d in cg.dirs if (d / "pids.max").exists()), None)
    if pids_dir is not None:
        assert (pids_dir / "pids.max").read_text().strip() == str(BROWSER_LIMITS.pids)


def test_writes_land_only_in_the_workspace(browser: Browser, tmp_path: Path) -> None:
    jail = browser.jail
    assert jail is not None
    # Chromium's profile (Playwright's --user-data-dir under /tmp) is in the workspace.
    assert any(p.name.startswith("playwright_chromiumdev_profile") for p in jail.workspace.iterdir())
    probe = textwrap.dedent("""
        import ctypes, os, socket
        def unshare_user():
            if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
                raise OSError(ctypes.get_errno(), "unshare")
        def attempt(what, fn):
            try:
                fn()
                print(what, "ALLOWED")
            except OSError as exc:
                print(what, "denied", type(exc).__name__)
        for path in ("/usr/aw-escape", "/etc/aw-escape", "/aw-escape", "/proc/aw-escape"):
            attempt("create " + path, lambda p=path: os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)))
        attempt("core_pattern", lambda: os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY)))
        attempt("sysrq", lambda: os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY)))
        attempt("unshare", unshare_user)
        attempt("internet", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
        with open("/tmp/aw-inside", "w") as fh:
            fh.write("inside")
        print("visible", sorted(os.listdir("/")))
        print("fds", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
    """)
    script = tmp_path / "probe"
    script.write_text(jail.script(["/usr/bin/python3", "-c", probe]))
    script.chmod(0o755)
    out = subprocess.run([str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ALLOWED" not in out.stdout, out.stdout
    assert out.stdout.count("denied") == 8, out.stdout
    assert "visible ['bin', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr']" in out.stdout, out.stdout
    fds = eval(out.stdout.split("fds ", 1)[1])  # noqa: S307 - a list of ints printed above
    assert 9 not in fds, fds  # the launcher's descriptor for the filter stays outside
    assert (jail.workspace / "aw-inside").read_text() == "inside"
    assert not Path("/tmp/aw-inside").exists()


def test_closing_removes_the_jail() -> None:
    with Sites() as sites:
        b = Browser(sites.host_rules(), netns=sites.netns)
        jail = b.jail
        assert jail is not None and jail.cgroup is not None
        folders, workspace = list(jail.cgroup.dirs), jail.workspace
        assert _chromium_pids(b)
        b.close()
    assert not workspace.exists()
    assert not any(d.exists() for d in folders)
