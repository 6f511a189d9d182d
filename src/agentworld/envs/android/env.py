"""``android-v1``: a real Android device or emulator over adb.

Each observation is the screen's view hierarchy (``uiautomator dump``) rendered as the
domain's HTML-like elements (:mod:`agentworld.envs.android.render`); each action is one of
the domain's JSON gestures (:mod:`agentworld.envs.android.actions`), sent as ``input``
events or an ``am start``. No emulator runs on our own machines: a user with a device
records with it (``agentworld collect android``).
"""

from __future__ import annotations

import time
from typing import Any

from agentworld.envs.android.actions import Gesture, parse_action
from agentworld.envs.android.adb import AdbError, Device, connect
from agentworld.envs.android.hierarchy import HierarchyError, parse_uiautomator
from agentworld.envs.android.render import Rendering, render
from agentworld.envs.base import Env, Reset, Step
from agentworld.records.trajectory import SimContext


class AndroidEnv(Env):
    """The device's screen after each gesture.

    ``options`` of :meth:`reset`: ``task`` (the task text), ``app`` (a package or a name
    in ``apps`` to open first) and ``home`` (press home first; default true). ``settle_s``
    is the pause after a gesture before the screen is read (animations end).
    """

    domain = "android"
    deterministic_reset = False  # a real device's screen (clock, notifications) changes by itself

    def __init__(self, *, serial: str | None = None, device: Device | None = None, adb_path: str | None = None,
                 settle_s: float = 1.0, apps: dict[str, str] | None = None, compact: bool = True):
        self.device = device or connect(serial, adb_path=adb_path)
        self.settle_s = settle_s
        self.apps = {k.lower(): v for k, v in (apps or {}).items()}
        self.compact = compact
        self.screen: Rendering | None = None
        self.task = ""
        self.initial_state: str | None = None
        self.dumps: list[str] = []
        """The raw uiautomator XML of every screen read this episode, in order."""
        self._info: dict[str, str] | None = None

    def device_info(self) -> dict[str, str]:
        """Serial, Android version, SDK level and model (read once)."""
        if self._info is None:
            self._info = self.device.info()
        return self._info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        options = options or {}
        self.task = str(options.get("task", ""))
        self.dumps = []
        if options.get("home", True):
            self.device.key("home")
        opened = None
        if app := options.get("app"):
            opened = self.device.launch(self.resolve_app(str(app)))
        self._settle()
        self.screen = self._read()
        info = self.device_info()
        self.initial_state = (f"Android {info['android_version']} (SDK {info['sdk']}) on a "
                              f"{info['manufacturer']} {info['model']}. The screen shows:\n{self.screen.text}")
        return Reset(self.screen.text, {"device": info, "opened": opened, "elements": len(self.screen.elements)})

    def step(self, action: str) -> Step:
        gesture = parse_action(action)
        if isinstance(gesture, str):
            return Step(f"Error: {gesture}", 0.0, False, False, {"is_error": True})
        try:
            done = self._perform(gesture)
        except ValueError as exc:  # the action names no element on this screen, types non-ASCII...
            return Step(f"Error: {exc}", 0.0, False, False, {"is_error": True, "gesture": gesture.kind})
        except AdbError as exc:
            return Step(f"Error: the device stopped answering: {exc}", 0.0, False, True,
                        {"is_error": True, "gesture": gesture.kind, "env_failure": str(exc)})
        try:
            self._settle(gesture.seconds if gesture.kind == "wait" else None)
            self.screen = self._read()
        except (AdbError, HierarchyError) as exc:
            return Step(f"Error: the screen could not be read: {exc}", 0.0, False, True,
                        {"is_error": True, "gesture": gesture.kind, "env_failure": str(exc)})
        return Step(self.screen.text, 0.0, False, False,
                    {"gesture": gesture.kind, **done, "elements": len(self.screen.elements)})

    def context(self) -> SimContext:
        return SimContext(task_description=self.task, initial_state=self.initial_state)

    # -- internals -----------------------------------------------------------------------
    def _settle(self, seconds: float | None = None) -> None:
        delay = self.settle_s if seconds is None else seconds
        if delay > 0:
            time.sleep(delay)

    def _read(self) -> Rendering:
        xml = self.device.dump()
        screen = render(parse_uiautomator(xml, f"{self.device.serial}:uiautomator dump"), compact=self.compact)
        self.dumps.append(xml)
        return screen

    def resolve_app(self, name: str) -> str:
        """A package for an app name: a package as given, a name from ``apps``, or the one
        installed package whose name contains it (``clock`` -> ``com.android.deskclock``)."""
        if name.lower() in self.apps:
            return self.apps[name.lower()]
        packages = self.device.packages()
        if name in packages:
            return name
        key = name.lower().replace(" ", "")
        hits = [p for p in packages if key in p.lower()]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise ValueError(f"no installed app matches {name!r}")
        raise ValueError(f"{name!r} matches {len(hits)} packages ({', '.join(hits[:5])}): name the package")

    def _point(self, g: Gesture) -> tuple[int, int]:
        if g.x is not None and g.y is not None:
            return g.x, g.y
        return self._element_box(g)[:2]

    def _element_box(self, g: Gesture) -> tuple[int, int, tuple[int, int, int, int]]:
        assert self.screen is not None and g.element is not None
        el = self.screen.element(g.element)
        if el is None:
            raise ValueError(f"no element {g.element} on this screen (ids 0-{len(self.screen.elements) - 1})")
        if el.node.bounds is None:
            raise ValueError(f"element {g.element} has no bounds to touch")
        x, y = el.node.center()  # type: ignore[misc]
        return x, y, el.node.bounds

    def _perform(self, g: Gesture) -> dict[str, Any]:
        """Send the gesture; returns what the turn's metadata records (the point touched...)."""
        if self.screen is None:
            raise ValueError("reset the environment first")
        d = self.device
        if g.kind in ("back", "home", "enter"):
            d.key(g.kind)
            return {}
        if g.kind == "wait":
            return {}
        if g.kind == "open_app":
            return {"opened": d.launch(self.resolve_app(g.name or ""))}
        if g.kind in ("tap", "long_press"):
            x, y = self._point(g)
            hit = self.screen.element_at(x, y) if g.element is None else None
            (d.tap if g.kind == "tap" else d.long_press)(x, y)
            return {"x": x, "y": y, **({"element": hit.id} if hit else {})}
        if g.kind == "type":
            d.check_text(g.text or "")  # before the tap: a refused text leaves the screen as it was
            placed = g.element is not None or g.x is not None
            point = self._point(g) if placed else None
            if point:
                d.tap(*point)
            d.type_text(g.text or "")
            if g.enter:
                d.key("enter")
            return {"x": point[0], "y": point[1]} if point else {}
        # swipe: a third of the screen (or of the element) through its centre
        if g.element is not None:
            x, y, (left, top, right, bottom) = self._element_box(g)
            w, h = right - left, bottom - top
        else:
            w, h = d.screen_size()
            x, y = w // 2, h // 2
        dx, dy = {"up": (0, -h // 3), "down": (0, h // 3), "left": (-w // 3, 0), "right": (w // 3, 0)}[g.direction or "up"]
        x1, y1, x2, y2 = x - dx // 2, y - dy // 2, x + dx // 2, y + dy // 2
        d.swipe(x1, y1, x2, y2)
        return {"from": [x1, y1], "to": [x2, y2]}
