"""``web-v1``: real Chromium on loopback sites, BrowserGym-style actions and observations.

An action is one call on element ids from the last tree (:mod:`.actions`); the
observation is the page state: ``URL:``, ``Title:``, ``Tabs:``, ``Focused:`` and
``Scroll:`` lines, then the accessibility tree (:mod:`.axtree`). An action the browser
refuses (an unknown id, a hidden or disabled element, a bad URL) leaves the page as it
was and puts Playwright's own error text on a first ``Error:`` line.

Each episode gets a fresh browser context (no cookies, history or tabs from the one
before). ``reset(options=...)`` takes ``task`` (the description), ``start_url``
(default the Datasette home), ``tabs`` (more URLs opened behind the first) or ``miniwob``
(a MiniWoB++ task name, started with the episode's seed; a finished MiniWoB task ends
the episode with its reward).
"""

from __future__ import annotations

import re
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.web.actions import Action, parse_action
from agentworld.envs.web.axtree import MARK_JS, render, tabs_line
from agentworld.envs.web.browser import CHROMIUM, Browser
from agentworld.envs.web.sites import INDEX, MINIWOB, Sites
from agentworld.records.trajectory import SimContext

VIEWPORT = {"width": 1280, "height": 720}
HOME = f"http://{INDEX}/"

# MiniWoB's score board counts down in real time; hidden, so a page's tree depends only on the episode.
_MINIWOB_CSS = "#reward-display, #click-canvas { display: none !important; }"
_MINIWOB_INIT = (f"if (location.hostname === '{MINIWOB}') document.addEventListener('DOMContentLoaded', () => {{"
                 f" const s = document.createElement('style'); s.textContent = '{_MINIWOB_CSS}';"
                 " document.head.appendChild(s); });")
_MINIWOB_START = ("(seed) => { Math.seedrandom(seed); core.EPISODE_MAX_TIME = 24 * 3600 * 1000;"
                  " core.startEpisodeReal(); }")
_MINIWOB_DONE = ("() => (typeof WOB_DONE_GLOBAL === 'undefined') ? null"
                 " : [WOB_DONE_GLOBAL, WOB_RAW_REWARD_GLOBAL, WOB_REWARD_REASON]")
# Playwright's call log repeats retries and waits (how many depends on timing); the lines that
# say what went wrong are kept, so an error reads the same in every run.
_NOISE = re.compile(r"^\s*(-\s*)?(\d+ × )?(retrying|waiting \d+ ?ms|attempting|scrolling into view|done scrolling|"
                    r"waiting for element to be visible)")


def error_text(exc: BaseException) -> str:
    """Playwright's message: its first line and the distinct call-log lines that explain it."""
    msg = str(getattr(exc, "message", None) or exc).strip()
    head, _, log = msg.partition("\nCall log:")
    lines = list(dict.fromkeys(line.strip() for line in log.splitlines()
                               if line.strip() and not _NOISE.match(line)))
    text = head.strip().replace("\n", " ")
    return text + ("\nCall log:\n" + "\n".join(f"  {ln}" for ln in lines[:6]) if lines else "")


class WebEnv(Env):
    """A browser on the loopback sites, one episode at a time.

    ``sites``: a shared :class:`Sites` (read-only, so many envs can use one); by default the
    env starts its own and stops it on :meth:`close`. ``action_timeout_ms`` bounds how long
    an action waits for its element (an unknown id fails after it).
    """

    domain = "web"
    deterministic_reset = True

    def __init__(self, *, sites: Sites | None = None, action_timeout_ms: int = 1000, settle_ms: int = 50):
        self._own_sites = sites is None
        self.sites = sites if sites is not None else Sites()
        self.action_timeout_ms = action_timeout_ms
        self.settle_ms = settle_ms
        self._browser: Browser | None = None
        self._context: Any = None
        self._active = 0
        self._task = ""
        self._start = HOME

    # -- the contract -----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        options = dict(options or {})
        self._task = str(options.get("task", ""))
        miniwob = options.get("miniwob")
        self._start = f"http://{MINIWOB}/miniwob/{miniwob}.html" if miniwob else str(options.get("start_url", HOME))
        tabs = [str(u) for u in options.get("tabs", [])]
        if self._browser is None:
            self._browser = Browser(self.sites.host_rules(), executable=CHROMIUM, netns=self.sites.netns)
        browser = self._browser

        def start() -> str:
            if self._context is not None:
                self._context.close()
            self._context = browser.browser.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC",
                                                        service_workers="block", reduced_motion="reduce")
            self._context.add_init_script(_MINIWOB_INIT)
            self._context.set_default_timeout(self.action_timeout_ms)
            self._context.set_default_navigation_timeout(15_000)
            for url in [*tabs, self._start]:
                page = self._context.new_page()
                page.goto(url, wait_until="load")
            if miniwob:
                page.evaluate(_MINIWOB_START, str(seed if seed is not None else 0))
            self._active = len(tabs)
            return self._observe()

        obs = browser.call(start)
        return Reset(obs, {"url": self._start})

    def step(self, action: str) -> Step:
        if self._browser is None or self._context is None:
            raise RuntimeError("call reset() before step()")
        parsed = parse_action(action)
        browser = self._browser

        def act() -> tuple[str, float, bool, dict[str, Any]]:
            error = None
            if isinstance(parsed, str):
                error = f"invalid action: {parsed}"
            else:
                try:
                    self._apply(parsed)
                except Exception as exc:  # noqa: BLE001 - Playwright's error is the observation
                    if type(exc).__name__ not in ("Error", "TimeoutError", "ValueError", "IndexError"):
                        raise
                    error = error_text(exc)
                self._settle()
            # The browser answered, so an error is the action's, not an environment failure
            # (the data filters would otherwise drop Playwright timeouts and net::ERR_ pages).
            reward, done, info = 0.0, False, {"action": parsed.name if isinstance(parsed, Action) else None,
                                              "is_error": error is not None, "env_failure": False}
            if (state := self._miniwob_state()) is not None and state[0]:
                reward, done = float(state[1]), True
                info["miniwob_reward"], info["miniwob_reason"] = reward, state[2]
            obs = self._observe(error)
            info["url"] = self._page().url
            return obs, reward, done, info

        obs, reward, done, info = browser.call(act)
        return Step(obs, reward, done, False, info)

    def context(self) -> SimContext:
        state = f"{self.sites.describe()}\nThe browser starts at {self._start}."
        return SimContext(task_description=self._task, initial_state=state)

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
            self._context = None
        if self._own_sites:
            self.sites.close()

    # -- inside the browser thread --------------------------------------------------------------
    def _page(self) -> Any:
        pages = self._context.pages
        if not pages:
            self._context.new_page()
            pages = self._context.pages
        self._active = min(self._active, len(pages) - 1)
        return pages[self._active]

    def _apply(self, a: Action) -> None:
        page = self._page()
        args = a.args
        loc = page.locator(f'[bid="{args["bid"]}"]') if "bid" in args else None
        n_pages = len(self._context.pages)
        on_element = {"click": lambda: loc.click(button=args["button"]), "dblclick": lambda: loc.dblclick(),
                      "fill": lambda: loc.fill(args["value"]), "clear": lambda: loc.clear(),
                      "hover": lambda: loc.hover(), "focus": lambda: loc.focus(),
                      "select_option": lambda: loc.select_option(args["options"])}
        if a.name in on_element:
            on_element[a.name]()
        elif a.name == "keyboard_press":
            page.keyboard.press(args["key"])
        elif a.name == "keyboard_type":
            page.keyboard.type(args["text"])
        elif a.name == "scroll":
            page.mouse.wheel(args["delta_x"], args["delta_y"])
        elif a.name == "goto":
            page.goto(args["url"], wait_until="load")
        elif a.name == "go_back":
            page.go_back(wait_until="load")
        elif a.name == "go_forward":
            page.go_forward(wait_until="load")
        elif a.name == "new_tab":
            self._context.new_page()
            self._active = len(self._context.pages) - 1
        elif a.name == "tab_focus":
            index = int(args["index"])
            if not 0 <= index < len(self._context.pages):
                raise IndexError(f"tab_focus: no tab {index} (open tabs: 0 to {len(self._context.pages) - 1})")
            self._active = index
            self._page().bring_to_front()
        elif a.name == "tab_close":
            page.close()
            self._active = max(0, self._active - 1)
        elif a.name == "noop":
            page.wait_for_timeout(min(float(args["wait_ms"]), 5000))
        if len(self._context.pages) > n_pages and a.name != "new_tab":
            self._active = len(self._context.pages) - 1  # a link that opened a tab: follow it, as a user would

    def _settle(self) -> None:
        """Wait until the page an action led to has loaded and painted; never raises (a
        page that is still loading is observed as it is)."""
        for _ in range(3):
            page = self._page()
            try:
                page.wait_for_load_state("load", timeout=10_000)
                # Two animation frames: the DOM updates scheduled by the action's events are in.
                page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                if self.settle_ms:
                    page.wait_for_timeout(self.settle_ms)
                return
            except Exception:  # noqa: BLE001, S112 - a navigation replaced the document: wait for the new one
                continue

    def _miniwob_state(self) -> list[Any] | None:
        page = self._page()
        if not page.url.startswith(f"http://{MINIWOB}/"):
            return None
        try:
            return page.evaluate(_MINIWOB_DONE)
        except Exception:  # noqa: BLE001 - a page between navigations has no state yet
            return None

    def _observe(self, error: str | None = None) -> str:
        page = self._page()
        for attempt in range(5):  # a navigation may replace the document under the script
            try:
                marks = page.evaluate(MARK_JS)
                break
            except Exception:  # noqa: BLE001
                if attempt == 4:
                    raise
                self._settle()
        cdp = self._context.new_cdp_session(page)
        try:
            dom = cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
            ax = cdp.send("Accessibility.getFullAXTree")
        finally:
            cdp.detach()
        tree = render(ax, dom, marks)
        titles = [(p.title(), p.url) for p in self._context.pages]
        head = [f"Error: {error}"] if error else []
        head += [f"URL: {page.url}", f"Title: {page.title()}", f"Tabs: {tabs_line(titles, self._active)}",
                 f"Focused: {tree.focused or 'none'}", f"Scroll: {tree.scroll}", ""]
        return "\n".join(head) + tree.text
