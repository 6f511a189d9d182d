"""Debian's Chromium under Playwright, on one thread of its own, reaching only the sites.

Playwright's synchronous objects belong to the thread that made them, while an episode's
steps may come from any thread (collection workers, ``asyncio.to_thread`` in the agent
loop). So every browser call runs on one dedicated thread per browser.

Network: the browser runs in the sites' network namespace (only loopback; see
:mod:`.sites`), and there it resolves only the site names (``Sites.host_rules``); every other
name fails to resolve, and everything not under ``.test`` -- IP literals and loopback
included -- goes to a proxy on a closed loopback port, so it fails too. Background
services (updates, safe browsing, metrics, sync) are off.

Confinement: Chromium runs inside its own bubblewrap jail (:mod:`.jail`): unprivileged
uid, no capabilities, the os sandboxes' seccomp filter, cgroup and rlimits, and a
filesystem of read-only system folders plus one writable workspace.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from agentworld.envs._owner import OWNER_VAR, token
from agentworld.envs.sandbox.errors import SandboxUnavailable
from agentworld.envs.web.jail import BrowserJail

CHROMIUM = Path("/usr/bin/chromium")
"""Debian's ``chromium`` package (never ``playwright install``)."""
DEAD_PROXY = "http://127.0.0.1:9"
"""A loopback port nothing serves (discard): requests sent to it fail at once."""

_QUIET = ["--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-default-apps", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
          "--disable-breakpad", "--metrics-recording-only", "--no-first-run", "--no-pings",
          "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication",
          "--font-render-hinting=none"]

T = TypeVar("T")


class BrowserUnavailable(RuntimeError):
    """Chromium cannot start here; the message says what to install."""


def launch_args(host_rules: str) -> list[str]:
    return [f"--proxy-server={DEAD_PROXY}", "--proxy-bypass-list=<-loopback>;*.test",
            f"--host-resolver-rules={host_rules}", *_QUIET]


class Browser:
    """One headless Chromium in its own jail, driven on its own thread; :meth:`call` runs a
    function there. ``netns``: the network namespace the browser joins (the sites')."""

    def __init__(self, host_rules: str, *, executable: Path = CHROMIUM, netns: str | None = None):
        if not executable.exists():
            raise BrowserUnavailable(f"{executable} is missing: apt-get install chromium (or run scripts/setup.sh)")
        try:
            self.jail: BrowserJail | None = BrowserJail(executable, netns=netns)
        except SandboxUnavailable as exc:
            raise BrowserUnavailable(f"the browser sandbox cannot start: {exc}") from exc
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="web-browser")
        self._pw: Any = None
        self.browser: Any = None
        try:
            self.call(lambda: self._start(host_rules, self.jail.wrapper))  # type: ignore[union-attr]
        except BaseException:
            self.close()
            raise

    def _start(self, host_rules: str, executable: Path) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        # Tagged, so a sweep after a kill ends the browser and its children (envs/sweep.py).
        # Nothing else of the caller's environment (API keys, tokens) reaches even the
        # jail's launcher, whose environment the browser's uid could read on the host.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", OWNER_VAR: token()}
        self.browser = self._pw.chromium.launch(executable_path=str(executable), headless=True,
                                                args=launch_args(host_rules), env=env)

    def call(self, fn: Callable[[], T]) -> T:
        return self._thread.submit(fn).result()

    def close(self) -> None:
        if self._thread is None:
            return
        jail, self.jail = self.jail, None

        def stop() -> None:
            try:
                if self.browser is not None:
                    self.browser.close()
            finally:
                if self._pw is not None:
                    self._pw.stop()

        with contextlib.suppress(Exception):  # closing must not fail; a leftover browser is swept later
            self._thread.submit(stop).result(timeout=30)
        self._thread.shutdown(wait=False)
        self._thread = None  # type: ignore[assignment]
        self.browser = self._pw = None
        if jail is not None:
            jail.close()  # kills what is left in its cgroup, removes the workspace
