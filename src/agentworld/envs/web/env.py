"""``web-v1``: real Chromium on loopback sites, BrowserGym-style actions and observations.

An action is one call on element ids from the last tree (:mod:`.actions`); the
observation is the page state: ``URL:``, ``Title:``, ``Tabs:``, ``Focused:`` and
``Scroll:`` lines, then the accessibility tree (:mod:`.axtree`). An action the browser
refuses (an unknown id, a hidden or disabled element, a bad URL) leaves the page as it
was and puts Playwright's own error text on a first ``Error:`` line.

The observation is taken once the page has settled (:meth:`WebEnv._settle`): loaded, no
request of the context in flight, and scroll positions (the window's and any element's),
the document's size and its element count unchanged over two animation frames, so a
smooth scroll (``keyboard_press('End')``, a wheel) is observed where it ends. The wait is
bounded (``settle_timeout_ms``, 1.5 s by default); a page that never settles is observed as
it is, with ``settled=False`` in the step's info.

``send_msg_to_user(text)`` and ``report_infeasible(reason)`` change no page: they are kept in
:attr:`WebEnv.chat` and the step's info, and shown once on a first line of the observation;
``report_infeasible`` ends the episode, as in BrowserGym. ``upload_file`` takes files from
the env's upload folder only (``upload_dir``, or a fresh folder per episode that
``reset(options={"files": {name: content}})`` fills); any other path is refused.

Each episode gets a fresh browser context (no cookies, history or tabs from the one
before). ``reset(options=...)`` takes ``task`` (the description), ``start_url``
(default the Datasette home), ``tabs`` (more URLs opened behind the first) or ``miniwob``
(a MiniWoB++ task name, started with the episode's seed; a finished MiniWoB task ends
the episode with its reward) and ``files`` (name -> text or bytes, put in the upload folder).
"""

from __future__ import annotations

import mimetypes
import re
import shutil
import tempfile
import time
from pathlib import Path
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
# Counts scroll events of the window and of every element (they do not bubble, but reach a
# capturing listener), so the settle check sees a scrolling container too.
_SCROLL_INIT = ("window.__awScrolls = 0; window.addEventListener('scroll', () => { window.__awScrolls += 1; },"
                " {capture: true, passive: true});")
# Resolves true once scroll, document size and element count stayed the same over two animation
# frames and at least `min` ms passed; false at `budget` ms (a timer, should frames stop).
_STILL_JS = """([min, budget]) => new Promise(resolve => {
  const t0 = performance.now(), d = document;
  const state = () => {
    const s = d.scrollingElement || d.documentElement;
    return [window.scrollX, window.scrollY, s ? s.scrollWidth : 0, s ? s.scrollHeight : 0,
            d.getElementsByTagName('*').length, window.__awScrolls || 0].join(',');
  };
  let last = state(), same = 0, done = false;
  const finish = ok => { if (!done) { done = true; resolve(ok); } };
  setTimeout(() => finish(false), budget);
  const tick = () => {
    if (done) return;
    const now = state();
    if (now === last) same += 1; else { same = 0; last = now; }
    if (same >= 2 && performance.now() - t0 >= min) finish(true); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})"""
_LONG_LIVED = ("eventsource", "websocket")
"""Requests that stay open by design; the settle check does not wait for them."""
MAX_UPLOAD_BYTES = 10 * 2**20
"""The largest file ``upload_file`` hands to a page."""
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
    an action waits for its element (an unknown id fails after it). ``settle_ms`` is the least
    and ``settle_timeout_ms`` the most time an observation waits for the page to settle after
    it loaded. ``upload_dir``: the one folder ``upload_file`` may take files from (by default
    a fresh folder per episode, filled by the ``files`` reset option).
    """

    domain = "web"
    deterministic_reset = True

    def __init__(self, *, sites: Sites | None = None, action_timeout_ms: int = 1000, settle_ms: int = 50,
                 settle_timeout_ms: int = 1500, upload_dir: str | Path | None = None):
        self._own_sites = sites is None
        self.sites = sites if sites is not None else Sites()
        self.action_timeout_ms = action_timeout_ms
        self.settle_ms = settle_ms
        self.settle_timeout_ms = settle_timeout_ms
        self._fixed_uploads = Path(upload_dir).resolve() if upload_dir is not None else None
        self._episode_uploads: Path | None = None
        self._inflight: set[Any] = set()
        self.chat: list[dict[str, str]] = []
        """What the agent sent this episode: ``{"role": "assistant" | "infeasible", "message": ...}``."""
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
        files = dict(options.get("files") or {})
        if self._browser is None:
            self._browser = Browser(self.sites.host_rules(), executable=CHROMIUM, netns=self.sites.netns)
        browser = self._browser
        self._new_upload_folder(files)
        self.chat = []

        def start() -> tuple[str, bool]:
            if self._context is not None:
                self._context.close()
            self._inflight = set()
            self._context = browser.browser.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="UTC",
                                                        service_workers="block", reduced_motion="reduce")
            self._context.on("request", self._request_started)
            self._context.on("requestfinished", self._request_ended)
            self._context.on("requestfailed", self._request_ended)
            self._context.add_init_script(_MINIWOB_INIT)
            self._context.add_init_script(_SCROLL_INIT)
            self._context.set_default_timeout(self.action_timeout_ms)
            self._context.set_default_navigation_timeout(15_000)
            for url in [*tabs, self._start]:
                page = self._context.new_page()
                page.goto(url, wait_until="load")
            if miniwob:
                page.evaluate(_MINIWOB_START, str(seed if seed is not None else 0))
            self._active = len(tabs)
            settled = self._settle()
            return self._observe(), settled

        obs, settled = browser.call(start)
        return Reset(obs, {"url": self._start, "settled": settled})

    def step(self, action: str) -> Step:
        if self._browser is None or self._context is None:
            raise RuntimeError("call reset() before step()")
        parsed = parse_action(action)
        browser = self._browser

        def act() -> tuple[str, float, bool, dict[str, Any]]:
            error, settled = None, True
            if isinstance(parsed, str):
                error = f"invalid action: {parsed}"
            else:
                try:
                    self._apply(parsed)
                except Exception as exc:  # noqa: BLE001 - Playwright's error is the observation
                    if type(exc).__name__ not in ("Error", "TimeoutError", "ValueError", "IndexError"):
                        raise
                    error = error_text(exc)
                settled = self._settle()
            # The browser answered, so an error is the action's, not an environment failure
            # (the data filters would otherwise drop Playwright timeouts and net::ERR_ pages).
            reward, done, info = 0.0, False, {"action": parsed.name if isinstance(parsed, Action) else None,
                                              "is_error": error is not None, "env_failure": False,
                                              "settled": settled}
            note = None
            if isinstance(parsed, Action) and error is None and parsed.name == "send_msg_to_user":
                self.chat.append({"role": "assistant", "message": parsed.args["text"]})
                info["message_to_user"] = parsed.args["text"]
                note = f"Message to user: {parsed.args['text']!r}"
            elif isinstance(parsed, Action) and error is None and parsed.name == "report_infeasible":
                self.chat.append({"role": "infeasible", "message": parsed.args["reason"]})
                info["infeasible"] = parsed.args["reason"]
                note, done = f"Reported infeasible: {parsed.args['reason']!r}", True
            if (state := self._miniwob_state()) is not None and state[0]:
                reward, done = float(state[1]), True
                info["miniwob_reward"], info["miniwob_reason"] = reward, state[2]
            obs = self._observe(error, note)
            info["url"] = self._page().url
            return obs, reward, done, info

        obs, reward, done, info = browser.call(act)
        return Step(obs, reward, done, False, info)

    def context(self) -> SimContext:
        state = f"{self.sites.describe()}\nThe browser starts at {self._start}."
        if names := self.upload_files():
            state += f"\nFiles for upload_file: {', '.join(names)}."
        return SimContext(task_description=self._task, initial_state=state)

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._browser = None
            self._context = None
        self._drop_upload_folder()
        if self._own_sites:
            self.sites.close()

    # -- uploads ------------------------------------------------------------------------------
    @property
    def upload_dir(self) -> Path | None:
        """The one folder ``upload_file`` takes files from (None before the first reset)."""
        return self._fixed_uploads or self._episode_uploads

    def upload_files(self) -> list[str]:
        """The files an agent may upload, by their names relative to :attr:`upload_dir`."""
        root = self.upload_dir
        if root is None or not root.is_dir():
            return []
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())

    def _new_upload_folder(self, files: dict[str, Any]) -> None:
        if self._fixed_uploads is None:
            self._drop_upload_folder()
            # In the browser jail's own folder (not its workspace, so the browser cannot write there):
            # removed with the jail, and by the sweep after a kill.
            jail = self._browser.jail if self._browser is not None else None
            parent = jail.dir if jail is not None else None
            self._episode_uploads = Path(tempfile.mkdtemp(prefix="uploads-", dir=parent)).resolve()
        root = self.upload_dir
        assert root is not None
        for name, content in files.items():
            path = self._upload_path(str(name))
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(str(content))

    def _drop_upload_folder(self) -> None:
        if self._episode_uploads is not None:
            shutil.rmtree(self._episode_uploads, ignore_errors=True)
            self._episode_uploads = None

    def _upload_path(self, name: str) -> Path:
        """``name`` resolved inside the upload folder (symlinks followed), or ValueError. The
        message names no host path, so an observation reads the same on every machine."""
        root = self.upload_dir
        if root is None:
            raise ValueError("upload_file: this environment has no upload folder")
        path = Path(name)
        target = (path if path.is_absolute() else root / path).resolve()
        if target == root or not target.is_relative_to(root):
            raise ValueError(f"upload_file: {name!r} is outside the upload folder; only its files can be uploaded "
                             f"({', '.join(map(repr, self.upload_files())) or 'it is empty'})")
        return target

    def _upload_payloads(self, file: str | list[str]) -> list[dict[str, Any]]:
        """The files as Playwright payloads: the env reads them, so the browser (in its jail)
        never opens a host path."""
        payloads = []
        for name in [file] if isinstance(file, str) else file:
            path = self._upload_path(name)
            if not path.is_file():
                raise ValueError(f"upload_file: no file {name!r} in the upload folder "
                                 f"({', '.join(map(repr, self.upload_files())) or 'it is empty'})")
            if path.stat().st_size > MAX_UPLOAD_BYTES:
                raise ValueError(f"upload_file: {name!r} is over {MAX_UPLOAD_BYTES // 2**20} MiB")
            payloads.append({"name": path.name, "buffer": path.read_bytes(),
                             "mimeType": mimetypes.guess_type(path.name)[0] or "application/octet-stream"})
        return payloads

    # -- inside the browser thread --------------------------------------------------------------
    def _page(self) -> Any:
        pages = self._context.pages
        if not pages:
            self._context.new_page()
            pages = self._context.pages
        self._active = min(self._active, len(pages) - 1)
        return pages[self._active]

    def _request_started(self, request: Any) -> None:
        if request.resource_type not in _LONG_LIVED:
            self._inflight.add(request)

    def _request_ended(self, request: Any) -> None:
        self._inflight.discard(request)

    def _loading(self) -> bool:
        """Whether a request of an open page is in flight."""
        for request in list(self._inflight):
            try:
                closed = request.frame.page.is_closed()
            except Exception:  # noqa: BLE001 - a request without a frame (a worker's): still counts
                closed = False
            if closed:
                self._inflight.discard(request)
        return bool(self._inflight)

    def _apply(self, a: Action) -> None:
        page = self._page()
        args = a.args

        def at(bid: str) -> Any:
            return page.locator(f'[bid="{bid}"]')

        loc = at(args["bid"]) if "bid" in args else None
        n_pages = len(self._context.pages)
        on_element = {"click": lambda: loc.click(button=args["button"], modifiers=args["modifiers"]),
                      "dblclick": lambda: loc.dblclick(button=args["button"], modifiers=args["modifiers"]),
                      "fill": lambda: loc.fill(args["value"]), "clear": lambda: loc.clear(),
                      "hover": lambda: loc.hover(), "focus": lambda: loc.focus(),
                      "press": lambda: loc.press(args["key_comb"]),
                      "select_option": lambda: loc.select_option(args["options"])}
        if a.name in on_element:
            on_element[a.name]()
        elif not self._pointer(a, page, loc, at):
            self._page_action(a, page)
        if len(self._context.pages) > n_pages and a.name != "new_tab":
            self._active = len(self._context.pages) - 1  # a link that opened a tab: follow it, as a user would

    def _pointer(self, a: Action, page: Any, loc: Any, at: Any) -> bool:
        """The mouse, drag and upload actions; False for any other."""
        args, mouse = a.args, page.mouse
        at_point = {"mouse_move": lambda: mouse.move(args["x"], args["y"]),
                    "mouse_click": lambda: mouse.click(args["x"], args["y"], button=args["button"]),
                    "mouse_dblclick": lambda: mouse.dblclick(args["x"], args["y"], button=args["button"])}
        if a.name in at_point:
            at_point[a.name]()
        elif a.name in ("mouse_down", "mouse_up"):
            mouse.move(args["x"], args["y"])
            (mouse.down if a.name == "mouse_down" else mouse.up)(button=args["button"])
        elif a.name == "drag_and_drop":  # BrowserGym's: hover, press, hover the target, release
            at(args["from_bid"]).hover()
            mouse.down()
            at(args["to_bid"]).hover()
            mouse.up()
        elif a.name == "mouse_drag_and_drop":
            mouse.move(args["from_x"], args["from_y"])
            mouse.down()
            mouse.move(args["to_x"], args["to_y"])
            mouse.up()
        elif a.name in ("upload_file", "mouse_upload_file"):
            payloads = self._upload_payloads(args["file"])  # refused before anything is clicked
            with page.expect_file_chooser() as chooser:
                if loc is not None:
                    loc.click()
                else:
                    mouse.click(args["x"], args["y"])
            chooser.value.set_files(payloads)
        else:
            return False
        return True

    def _page_action(self, a: Action, page: Any) -> None:
        """Keyboard, scroll, navigation and tab actions; the messages to the user do nothing here."""
        args = a.args
        if a.name == "keyboard_press":
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

    def _settle(self) -> bool:
        """Wait until the page an action led to has loaded, no request is in flight and scroll
        and layout held still over two animation frames (at least ``settle_ms``); True if it
        did within ``settle_timeout_ms`` after loading. Never raises: a page that does not
        settle is observed as it is."""
        deadline = None
        for _ in range(3):
            page = self._page()
            try:
                page.wait_for_load_state("load", timeout=10_000)
                deadline = deadline or time.monotonic() + self.settle_timeout_ms / 1000
                while (left_ms := (deadline - time.monotonic()) * 1000) > 0:
                    if self._loading():
                        page.wait_for_timeout(min(20, left_ms))
                    elif page.evaluate(_STILL_JS, [self.settle_ms, left_ms]) and not self._loading():
                        return True
                return False
            except Exception:  # noqa: BLE001, S112 - a navigation replaced the document: wait for the new one
                continue
        return False

    def _miniwob_state(self) -> list[Any] | None:
        page = self._page()
        if not page.url.startswith(f"http://{MINIWOB}/"):
            return None
        try:
            return page.evaluate(_MINIWOB_DONE)
        except Exception:  # noqa: BLE001 - a page between navigations has no state yet
            return None

    def _observe(self, error: str | None = None, note: str | None = None) -> str:
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
        head = [f"Error: {error}"] if error else [note] if note else []
        head += [f"URL: {page.url}", f"Title: {page.title()}", f"Tabs: {tabs_line(titles, self._active)}",
                 f"Focused: {tree.focused or 'none'}", f"Scroll: {tree.scroll}", ""]
        return "\n".join(head) + tree.text
