"""``os-v1``: a real Linux desktop (Xvfb, D-Bus, AT-SPI, openbox, Debian applications)
inside a fresh hardened sandbox per episode.

Everything runs in the sandbox of :mod:`agentworld.envs.sandbox`, as the terminal does:
its own user, PID, network (loopback only), IPC and mount namespaces, the seccomp filter,
a read-only root with an episode layer on a tmpfs, and cgroup limits on memory,
processes and CPU. The X server, the session bus, the applications and every action
program are processes of that sandbox; the host talks to them only through the pipes of
one driver process (``_helper.py``, run by the sandbox's own Python).

``reset`` writes the task's files into /workspace, starts the session and the task's
applications and returns the first observation. ``step`` runs one action: a Python
program (pyautogui imported; ``xdotool`` on the PATH) executed in the session, or
``WAIT``, ``DONE``, ``FAIL``. The observation is the desktop's accessibility tree, one
node per line (``role 'name' (x, y) WxH states text='...'``, indented by depth), then the
window list (``*`` marks the active window) and the focused node; what the program
printed follows under ``Output:``, and a program that failed shows its traceback.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.os.task import DesktopTask
from agentworld.envs.sandbox import Limits, Sandbox
from agentworld.records.trajectory import SimContext

HELPER = "/opt/agentworld/desktop.py"
SPECIAL = ("WAIT", "DONE", "FAIL")
LOST = "accessibility tree could not be read: the desktop session ended"
"""Observation of a step whose session died (an env failure the data filters drop)."""
_VERSIONS = "dpkg-query -W -f '${Package} ${Version}\\n' mousepad galculator xvfb openbox xdotool at-spi2-core"


@dataclass(frozen=True)
class DesktopConfig:
    """Timing and resource limits of the desktop environment."""

    max_steps: int = 40
    episode_seconds: float = 600.0
    """Wall time of one episode from reset; then the episode is truncated."""
    action_timeout_s: float = 20.0
    """Longest an action program may run before it is stopped (its error is shown)."""
    start_timeout_s: float = 60.0
    """Longest the session (X server, bus, applications) may take to come up."""
    limits: Limits = field(default_factory=lambda: Limits(memory_mb=2048, pids=512, cpus=1.0, disk_mb=512))
    rootfs: Path | None = None


class DesktopEnv(Env):
    """A real desktop session; see the module docstring for what reset and step return."""

    domain = "os"
    deterministic_reset = True

    def __init__(self, config: DesktopConfig | None = None, **overrides: Any):
        self.config = DesktopConfig(**{**(config.__dict__ if config else {}), **overrides})
        if self.config.rootfs is None:
            from agentworld.envs.os.rootfs import desktop_rootfs

            self.rootfs = desktop_rootfs(build=False)
        else:
            self.rootfs = self.config.rootfs
        self.sandbox: Sandbox | None = None
        self.driver: subprocess.Popen[bytes] | None = None
        self.task: DesktopTask | None = None
        self.initial_state = ""
        self.observation = ""
        self.steps = 0
        self._t0 = 0.0

    # -- episode -------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.task = _task_from(options or {}, seed or 0)
        # An application that registers with AT-SPI late (a loaded machine) fails the
        # start rarely; a fresh session once more, before reporting it.
        for attempt in (1, 2):
            self.close()
            reply = self._start_session()
            if reply is not None and reply.get("ok"):
                break
            if attempt == 2:
                why = reply.get("error") if reply else "no answer"
                self.close()
                raise RuntimeError(f"the desktop session of task {self.task.name} did not start: {why}")
        self.steps = 0
        self._t0 = time.monotonic()
        self.observation = reply["observation"]
        return Reset(self.observation, {"task": self.task.name})

    def _start_session(self) -> dict[str, Any] | None:
        assert self.task is not None
        sb = self.sandbox = Sandbox(limits=self.config.limits, rootfs=self.rootfs, hostname="desktop")
        from agentworld.envs.terminal.env import _write_tree  # one tar archive, written from inside

        helper = (Path(__file__).with_name("_helper.py")).read_text()
        files = {HELPER: helper, **{_abs(p): c for p, c in self.task.files.items()}}
        # Before the task's files: the versions cache is shared by every later episode.
        self.initial_state = self._initial_state(sb)
        _write_tree(sb, files, {})
        self.driver = sb.spawn(["python3", "-u", HELPER], cwd="/workspace", stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self._ask({"apps": [list(a) for a in self.task.apps]}, self.config.start_timeout_s)

    def step(self, action: str) -> Step:
        if self.driver is None or self.sandbox is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        t0 = time.monotonic()
        word = action.strip().upper()
        if word in ("DONE", "FAIL"):
            return Step(self.observation, 0.0, True, False, {"finished": word.lower()})
        code = "import time\ntime.sleep(1)" if word == "WAIT" else action
        left = self._t0 + self.config.episode_seconds - time.monotonic()
        timeout = max(min(self.config.action_timeout_s, left), 1.0)
        reply = self._ask({"op": "exec", "code": code, "timeout": timeout}, timeout + 15)
        if reply is None or not reply.get("ok"):
            # The session is gone (the program killed it, or a limit did): nothing to recover.
            detail = reply.get("error", "") if reply else "the session's driver stopped answering"
            if self.sandbox.cgroup is not None:
                self.sandbox.cgroup.kill_all()
            return Step(LOST, 0.0, False, True, {"error": detail, "truncated_reason": "session_lost"})
        self.observation = reply["observation"]
        obs = _with_program_output(self.observation, reply)
        info: dict[str, Any] = {"exit_code": reply["exit_code"], "duration_s": round(time.monotonic() - t0, 3),
                                "run_s": reply["run_s"], "apps_running": reply["alive"]}
        if reply["exit_code"] != 0:
            info["error"] = _last_line(reply["stderr"]) or f"exit status {reply['exit_code']}"
        if reply["timed_out"]:
            info["error"] = f"the program ran past {timeout:.0f} s and was stopped"
        if time.monotonic() - self._t0 >= self.config.episode_seconds:
            return Step(obs, 0.0, False, True, {**info, "truncated_reason": "episode_time_limit"})
        if self.steps >= self.config.max_steps:
            return Step(obs, 0.0, False, True, {**info, "truncated_reason": "max_steps"})
        return Step(obs, 0.0, False, False, info)

    def context(self) -> SimContext:
        return SimContext(task_description=self.task.description if self.task else "",
                          initial_state=self.initial_state or None)

    def close(self) -> None:
        if self.driver is not None:
            for stream in (self.driver.stdin, self.driver.stdout):
                if stream is not None:
                    stream.close()
            self.driver = None
        if self.sandbox is not None:
            self.sandbox.close()  # kills the session's every process (its cgroup)
            self.sandbox = None

    # -- the driver ------------------------------------------------------------------

    def _ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """Send one request line; the reply line, or None if none came within ``timeout``."""
        d = self.driver
        assert d is not None and d.stdin is not None and d.stdout is not None
        try:
            d.stdin.write(json.dumps(request).encode() + b"\n")
            d.stdin.flush()
        except (BrokenPipeError, ValueError):
            return None
        buf = b""
        deadline = time.monotonic() + timeout
        fd = d.stdout.fileno()
        while not buf.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            buf += chunk
        try:
            return json.loads(buf)
        except json.JSONDecodeError:
            return None

    def _initial_state(self, sb: Sandbox) -> str:
        cached = sb.rootfs.parent / f"{sb.rootfs.name}.desktop-versions.txt"
        if not cached.exists():
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(sb.run(_VERSIONS, cwd="/").stdout)
            os.replace(tmp, cached)  # whole or not at all, whoever writes last
        assert self.task is not None
        apps = ", ".join(" ".join(a) for a in self.task.apps)
        lines = ["OS: Debian GNU/Linux 12 (bookworm), X display :1 (Xvfb, 1280x800), window manager openbox",
                 "User: root, home /root, working directory /workspace; network: none",
                 "Python: python3 with pyautogui 0.9.54; xdotool on the PATH",
                 "Packages: " + ", ".join(cached.read_text().split("\n")).strip(", "),
                 f"Started: {apps}"]
        if self.task.files:
            lines.append("Files in /workspace:")
            for path, content in sorted(self.task.files.items()):
                lines.append(f"--- {path} ({len(content.encode())} bytes) ---")
                lines.append(content[:1500])
        else:
            lines.append("Files in /workspace: (empty)")
        return "\n".join(lines)


def _with_program_output(tree: str, reply: dict[str, Any]) -> str:
    parts = [tree]
    if reply["stdout"].strip():
        parts.append("Output:\n" + reply["stdout"].rstrip())
    if reply["timed_out"]:
        parts.append("Error: the program did not finish in time and was stopped")
    elif reply["exit_code"] != 0 and reply["stderr"].strip():
        parts.append(reply["stderr"].rstrip())
    return "\n".join(parts)


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def _task_from(options: dict[str, Any], seed: int) -> DesktopTask:
    from agentworld.envs.os.tasks import TEMPLATES

    task = options.get("task")
    if isinstance(task, DesktopTask):
        return task
    if isinstance(task, str):
        return TEMPLATES.get(task).instance(seed)
    if isinstance(task, dict):
        return DesktopTask(**{**task, "apps": tuple(tuple(a) for a in task.get("apps", [["mousepad"]]))})
    return DesktopTask(name="free", description=options.get("description", "Use the desktop."),
                       files=options.get("files", {}))


def _abs(path: str) -> str:
    return path if path.startswith("/") else f"/workspace/{path}"
