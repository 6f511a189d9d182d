"""A device or emulator over ``adb``: the view hierarchy, input events, app launches, properties.

Only the ``adb`` client runs here; every command names the device (``-s SERIAL``), so a
machine with several devices records from the one the user chose. Errors a user can fix
(no ``adb``, no device, an unauthorized one) are :class:`AdbUnavailable` with a fix;
a command that fails mid-episode is :class:`AdbError`.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

DUMP_PATH = "/sdcard/agentworld_dump.xml"
"""Where ``uiautomator dump`` writes on the device before the file is read back."""

KEYCODES = {"back": "KEYCODE_BACK", "home": "KEYCODE_HOME", "enter": "KEYCODE_ENTER"}


class AdbUnavailable(Exception):
    """adb or the device cannot be used; ``message`` says why, ``fix`` what to do."""

    def __init__(self, message: str, fix: str):
        super().__init__(f"{message} ({fix})")
        self.message, self.fix = message, fix


class AdbError(RuntimeError):
    """An adb command failed or timed out (the device went away, a tool is missing on it)."""


def find_adb(path: str | None = None) -> str:
    """The adb executable: ``path``, else ``adb`` on PATH."""
    exe = shutil.which(path or "adb")
    if exe is None:
        raise AdbUnavailable(f"{path or 'adb'} is not installed or not on PATH",
                             "install the Debian package 'adb' or the Android SDK platform-tools")
    return exe


def list_devices(adb: str, timeout_s: float = 30.0) -> list[tuple[str, str]]:
    """``(serial, state)`` of every device adb sees (state: ``device``, ``offline``, ``unauthorized``...)."""
    try:
        res = subprocess.run([adb, "devices"], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AdbUnavailable(f"'adb devices' failed: {exc}", "check that the adb server can start (adb start-server)") from None
    if res.returncode != 0:
        raise AdbUnavailable(f"'adb devices' failed: {res.stderr.strip() or res.stdout.strip()}",
                             "check that the adb server can start (adb start-server)")
    out = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith(("List of devices", "*")):
            out.append((parts[0], parts[1]))
    return out


def connect(serial: str | None = None, *, adb_path: str | None = None, timeout_s: float = 30.0) -> Device:
    """The device ``serial`` (or the only one attached), checked to be online."""
    adb = find_adb(adb_path)
    devices = list_devices(adb, timeout_s)
    if not devices:
        raise AdbUnavailable("no Android device or emulator is attached",
                             "start an emulator or plug in a device with USB debugging on, then check 'adb devices'")
    if serial is None:
        if len(devices) > 1:
            raise AdbUnavailable(f"{len(devices)} devices are attached ({', '.join(s for s, _ in devices)})",
                                 "choose one with --serial")
        serial = devices[0][0]
    states = dict(devices)
    if serial not in states:
        raise AdbUnavailable(f"no device {serial!r} (attached: {', '.join(states) or 'none'})", "check 'adb devices'")
    if states[serial] != "device":
        fix = ("accept the USB debugging prompt on the device" if states[serial] == "unauthorized"
               else "reconnect it or restart the emulator")
        raise AdbUnavailable(f"device {serial} is {states[serial]}", fix)
    return Device(adb=adb, serial=serial, timeout_s=timeout_s)


@dataclass
class Device:
    """One attached device; every method is one or two adb commands."""

    adb: str
    serial: str
    timeout_s: float = 30.0
    _size: tuple[int, int] | None = field(default=None, repr=False)

    def run(self, *args: str, binary: bool = False) -> str | bytes:
        cmd = [self.adb, "-s", self.serial, *args]
        try:
            res = subprocess.run(cmd, capture_output=True, timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise AdbError(f"'{shlex.join(args)}' did not answer within {self.timeout_s:.0f} s") from None
        except OSError as exc:
            raise AdbError(f"cannot run adb: {exc}") from None
        if res.returncode != 0:
            err = (res.stderr or res.stdout).decode("utf-8", "replace").strip()
            raise AdbError(f"'{shlex.join(args)}' failed (exit {res.returncode}): {err[:500]}")
        return res.stdout if binary else res.stdout.decode("utf-8", "replace")

    def shell(self, command: str) -> str:
        """One shell command line on the device (quote arguments with ``shlex.quote``)."""
        return str(self.run("shell", command))

    # -- reading the device ------------------------------------------------------------
    def getprop(self, name: str) -> str:
        return self.shell(f"getprop {shlex.quote(name)}").strip()

    def info(self) -> dict[str, str]:
        """What the trajectory's provenance says about the device."""
        props = {"android_version": "ro.build.version.release", "sdk": "ro.build.version.sdk",
                 "model": "ro.product.model", "manufacturer": "ro.product.manufacturer"}
        return {"serial": self.serial, **{k: self.getprop(p) for k, p in props.items()}}

    def dump(self, attempts: int = 3) -> str:
        """The current view hierarchy as uiautomator XML (dumped on the device, read back)."""
        last = ""
        for i in range(attempts):
            # uiautomator fails while the screen animates ("could not get idle state"): retry.
            last = self.shell(f"uiautomator dump {DUMP_PATH}")
            if "ERROR" not in last.upper():
                return str(self.run("exec-out", "cat", DUMP_PATH))
            time.sleep(0.5 * (i + 1))
        raise AdbError(f"uiautomator dump failed: {last.strip()[:300]}")

    def screen_size(self) -> tuple[int, int]:
        if self._size is None:
            out = self.shell("wm size")
            sizes = [ln.rsplit(":", 1)[-1].strip() for ln in out.splitlines() if "size" in ln.lower()]
            try:
                w, h = (int(v) for v in sizes[-1].split("x"))  # an override size comes last
            except (IndexError, ValueError):
                raise AdbError(f"cannot read the screen size from 'wm size': {out.strip()[:200]!r}") from None
            self._size = (w, h)
        return self._size

    def packages(self) -> list[str]:
        return sorted(ln.split(":", 1)[1].strip() for ln in self.shell("pm list packages").splitlines()
                      if ln.startswith("package:"))

    # -- acting ------------------------------------------------------------------------
    def tap(self, x: int, y: int) -> None:
        self.shell(f"input tap {x} {y}")

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        self.shell(f"input swipe {x1} {y1} {x2} {y2} {duration_ms}")

    def long_press(self, x: int, y: int, duration_ms: int = 1000) -> None:
        self.swipe(x, y, x, y, duration_ms)  # a swipe that stays put is a long press

    @staticmethod
    def check_text(text: str) -> None:
        """Raise ``ValueError`` for text ``input text`` cannot type."""
        if not text.isascii():
            raise ValueError("'input text' types ASCII only")
        if "%s" in text:
            raise ValueError("'input text' cannot type the two characters %s (it reads them as a space)")

    def type_text(self, text: str) -> None:
        # `input text` reads %s as a space and takes no spaces itself; the quoting is for
        # the device's shell, which reads this command line.
        self.check_text(text)
        if text:
            self.shell("input text " + shlex.quote(text.replace(" ", "%s")))

    def key(self, name: str) -> None:
        self.shell(f"input keyevent {KEYCODES[name]}")

    def launch(self, package: str) -> str:
        """Start ``package``'s launcher activity; returns the component started."""
        out = self.shell("cmd package resolve-activity --brief -c android.intent.category.LAUNCHER "
                         + shlex.quote(package))
        component = out.strip().splitlines()[-1].strip() if out.strip() else ""
        if "/" not in component:
            raise AdbError(f"{package} has no launcher activity ({out.strip()[:200]!r})")
        self.shell("am start -n " + shlex.quote(component))
        return component
