"""The desktop session's driver, run INSIDE the sandbox by its own Debian ``python3``.

Not imported by the package (the host's Python has no GObject bindings): the host
copies this file into the sandbox and talks to it over stdin/stdout, one JSON object
per line. It starts the X server (Xvfb), a D-Bus session bus, the AT-SPI bus, a window
manager and the task's applications, then answers requests:

- ``{"op": "exec", "code": str, "timeout": s}``: run the action program in a fresh
  ``python3`` (pyautogui imported), then wait for the screen to settle; returns its
  exit status, output and traceback;
- ``{"op": "observe"}``: the accessibility tree, window list and focus;
- ``{"op": "quit"}``.

Only standard library, python3-gi (Atspi) and python3-xlib: what the root provides.
"""

import json
import os
import subprocess
import sys
import time

DISPLAY = ":1"
SCREEN = (1280, 800)
BUS = "/tmp/aw-session-bus"
MAX_NODES = 300
MAX_TEXT = 300
# States worth a column: the rest (visible, showing, enabled...) hold for nearly every node.
STATES = ("focused", "active", "selected", "checked", "pressed", "expanded", "editable", "modal")
# Unnamed containers that only group their children: their children move up a level.
HOISTED = ("filler", "panel", "scroll-pane", "viewport", "layered-pane", "split-pane", "unknown", "redundant-object")
PRELUDE = (
    "import sys, traceback\n"
    "import pyautogui\n"
    "pyautogui.FAILSAFE = False\n"
    "pyautogui.PAUSE = 0.05\n"
    "_code = sys.stdin.read()\n"
    "try:\n"
    "    exec(compile(_code, '<action>', 'exec'), {'__name__': '__main__', 'pyautogui': pyautogui})\n"
    "except SystemExit as e:\n"
    "    raise\n"
    "except BaseException:\n"
    "    t, v, tb = sys.exc_info()\n"
    "    traceback.print_exception(t, v, tb.tb_next)\n"  # drop this wrapper's own frame
    "    sys.exit(1)\n"
)


def session_env():
    env = dict(os.environ)
    env.update({
        "DISPLAY": DISPLAY, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={BUS}", "XDG_RUNTIME_DIR": "/tmp/runtime",
        "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "0", "GTK_OVERLAY_SCROLLING": "0",
        "XDG_CURRENT_DESKTOP": "openbox", "NO_AT_BRIDGE_WARNING": "1",
    })
    env.pop("WAYLAND_DISPLAY", None)
    return env


class Session:
    def __init__(self, apps):
        self.env = session_env()
        os.makedirs("/tmp/runtime", mode=0o700, exist_ok=True)
        os.environ.update(self.env)
        self.procs = []
        self._start(["Xvfb", DISPLAY, "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp",
                     "-noreset"])
        _wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{DISPLAY[1:]}"), 10, "the X server")
        self._start(["dbus-daemon", "--session", "--nofork", f"--address=unix:path={BUS}"])
        _wait_for(lambda: os.path.exists(BUS), 10, "the D-Bus session bus")
        self._start(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        self._start(["openbox", "--sm-disable"])
        from Xlib import display  # after the X server is up

        self.x = display.Display(DISPLAY)
        _wait_for(lambda: self._net_supported(), 10, "the window manager")
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi

        self.atspi = Atspi
        for argv in apps:
            self._start(argv, cwd="/workspace")
        want = len(apps)
        _wait_for(lambda: len(self.windows()) >= want and self._apps_ready(want), 30, "the applications' windows")
        self.last = None
        self.settle()

    def _start(self, argv, cwd="/"):
        self.procs.append(subprocess.Popen(argv, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def _net_supported(self):
        atom = self.x.intern_atom("_NET_SUPPORTING_WM_CHECK")
        return self.x.screen().root.get_full_property(atom, 0) is not None

    def _apps_ready(self, want):
        desktop = self.atspi.get_desktop(0)
        frames = 0
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is not None and app.get_child_count() > 0:
                frames += 1
        return frames >= want

    # -- X window list ----------------------------------------------------------------
    def _prop(self, win, name):
        p = win.get_full_property(self.x.intern_atom(name), 0)
        return p.value if p is not None else None

    def windows(self):
        root = self.x.screen().root
        ids = self._prop(root, "_NET_CLIENT_LIST") or []
        active = (self._prop(root, "_NET_ACTIVE_WINDOW") or [0])[0]
        out = []
        for wid in ids:
            w = self.x.create_resource_object("window", wid)
            try:
                name = self._prop(w, "_NET_WM_NAME")
                name = name.decode("utf-8", "replace") if isinstance(name, bytes) else (w.get_wm_name() or "")
                geo = w.get_geometry()
                pos = w.translate_coords(root, 0, 0)
                out.append({"name": str(name), "x": -pos.x, "y": -pos.y, "w": geo.width, "h": geo.height,
                            "active": wid == active})
            except Exception:  # the window closed while we looked
                continue
        return out

    # -- accessibility tree -----------------------------------------------------------
    def describe(self, acc):
        """One node's line and facts, or None when it is not on screen (or went away)."""
        Atspi = self.atspi
        try:
            states = acc.get_state_set()
            if not states.contains(Atspi.StateType.SHOWING):
                return None
            role = acc.get_role_name().replace(" ", "-")
            name = acc.get_name() or ""
            text, caret = "", None
            ti = acc.get_text_iface()
            if ti is not None:
                n = Atspi.Text.get_character_count(ti)
                text = Atspi.Text.get_text(ti, 0, min(n, MAX_TEXT)) + (f"... ({n} characters)" if n > MAX_TEXT else "")
                caret = Atspi.Text.get_caret_offset(ti)
            ext = acc.get_extents(Atspi.CoordType.SCREEN)
            flags = [s for s in STATES if states.contains(getattr(Atspi.StateType, s.upper()))]
            if not states.contains(Atspi.StateType.SENSITIVE):
                flags.append("disabled")
            nchild = acc.get_child_count()
        except Exception:
            return None
        line = f"{role} {name!r} ({ext.x}, {ext.y}) {ext.width}x{ext.height}"
        if flags:
            line += " " + ",".join(flags)
        if text and text != name:
            line += f" text={text!r}"
        if caret is not None and "focused" in flags and "editable" in flags:
            line += f" caret={caret}"  # where typing goes: moving it is a change of state
        hoist = role in HOISTED and not name and not text and "focused" not in flags
        return {"role": role, "name": name, "line": line, "focused": "focused" in flags, "hoist": hoist,
                "children": min(nchild, 200)}

    def tree(self):
        desktop = self.atspi.get_desktop(0)
        lines = ["<root>"]
        focus = [None]

        def visit(acc, depth, frame):
            if len(lines) > MAX_NODES or (node := self.describe(acc)) is None:
                return
            if node["role"] in ("frame", "dialog", "alert", "file-chooser", "window"):
                frame = node["name"]
            if not node["hoist"]:
                lines.append("  " * depth + node["line"])
                if node["focused"]:
                    focus[0] = f"{node['role']} {node['name']!r}" + (f" in {frame!r}" if frame is not None else "")
                depth += 1
            for i in range(node["children"]):
                try:
                    child = acc.get_child_at_index(i)
                except Exception:
                    continue
                if child is not None:
                    visit(child, depth, frame)

        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is None or app.get_child_count() == 0:
                continue
            app.clear_cache()  # the cache misses changes: we run no event loop
            lines.append(f"  application {app.get_name() or ''!r}")
            for j in range(app.get_child_count()):
                if (child := app.get_child_at_index(j)) is not None:
                    visit(child, 2, None)
        if len(lines) > MAX_NODES:
            lines.append(f"  ... (tree cut at {MAX_NODES} nodes)")
        return lines, focus[0]

    def observe(self):
        lines, focus = self.tree()
        wins = self.windows()
        lines.append("Windows:")
        for w in wins:
            mark = "* " if w["active"] else "  "
            lines.append(f"  {mark}{w['name']!r} ({w['x']}, {w['y']}) {w['w']}x{w['h']}")
        if not wins:
            lines.append("  (none)")
        lines.append(f"Focused: {focus or 'nothing'}")
        return "\n".join(lines)

    def settle(self, before=None, limit=3.0, unchanged=1.0):
        """Wait until two looks at the desktop, a short pause apart, agree. A desktop still
        equal to ``before`` (what it showed before the action) is watched ``unchanged``
        seconds longer: on a loaded machine an application may not yet have handled the
        input when the program ends."""
        t0 = time.monotonic()
        prev = self.observe()
        while time.monotonic() - t0 < limit:
            time.sleep(0.15)
            now = self.observe()
            if now == prev and (now != before or time.monotonic() - t0 >= unchanged):
                break
            prev = now
        self.last = prev
        return prev

    def exec(self, code, timeout):
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, "-c", PRELUDE], input=code, capture_output=True, text=True,
                               env=self.env, cwd="/workspace", timeout=timeout)
            rc, out, err, timed_out = p.returncode, p.stdout, p.stderr, False
        except subprocess.TimeoutExpired as exc:
            rc, timed_out = -9, True
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        ran = time.monotonic() - t0
        obs = self.settle(before=self.last)
        return {"exit_code": rc, "stdout": out[-4000:], "stderr": err[-4000:], "timed_out": timed_out,
                "run_s": round(ran, 3), "observation": obs, "alive": self.apps_alive()}

    def apps_alive(self):
        return [p.args[0] for p in self.procs[4:] if p.poll() is None]


def _wait_for(cond, limit, what):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not come up within {limit} s")


def _private():
    """Make this process non-dumpable: its /proc entries (fd, mem) then need CAP_SYS_PTRACE,
    which no sandboxed process holds, so an action program cannot write forged replies
    into the pipe to the host or read the requests."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def main():
    _private()

    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    start = json.loads(sys.stdin.readline())
    try:
        session = Session(start["apps"])
    except Exception as exc:
        send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    send({"ok": True, "observation": session.last})
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "exec":
                send({"ok": True, **session.exec(req["code"], req.get("timeout", 20))})
            elif req["op"] == "observe":
                send({"ok": True, "observation": session.observe()})
            elif req["op"] == "quit":
                send({"ok": True})
                return
            else:
                send({"ok": False, "error": f"unknown op {req['op']!r}"})
        except Exception as exc:
            send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
