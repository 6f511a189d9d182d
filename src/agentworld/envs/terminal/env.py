"""``terminal-v1``: a real shell in a tmux pane inside a fresh sandbox per episode.

``reset`` builds the task's starting state (files, setup script, environment
variables), captures the initial-state text (OS, kernel, tool versions, cwd, prompt,
files) from the sandbox itself, starts the shell and returns the first screen.
``step`` types a keystroke-batch action and returns what the terminal shows: the
command line, its output and the next prompt, as soon as the prompt is back or after
the batch's duration (a running command shows its partial output). While a
full-screen program (vim, less, top) holds the screen, the whole screen is returned.
"""

from __future__ import annotations

import io
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.sandbox import Limits, Sandbox, ensure_rootfs
from agentworld.envs.terminal.keys import ActionError, Batch, parse_action
from agentworld.envs.terminal.task import TerminalTask
from agentworld.envs.terminal.tmux import BASHRC, TITLE_PREFIX, PaneState, TmuxPane

# Run inside the sandbox at reset; what a person sees when they first look around.
_STATE_SCRIPT = r"""
. /etc/os-release
echo "OS: $PRETTY_NAME"
echo "Kernel: $(uname -srm)"
echo "Hostname: $(hostname)"
echo "User: $(id -un) (uid $(id -u)), home $HOME"
echo "Shell: $(bash --version | head -n1)"
"""
_FILES_SCRIPT = r"""
echo "Network: none (loopback only)"
echo "Working directory: $PWD"
echo "Prompt: $(id -un)@$(hostname):${PWD}#"
if [ -n "$(ls -A "$PWD" 2>/dev/null)" ]; then
  echo "Files in $PWD:"
  find . -mindepth 1 -maxdepth 3 -name .git -prune -o -print | sort | head -n 60 | while read -r f; do
    if [ -d "$f" ]; then echo "  ${f#./}/"; else echo "  ${f#./} ($(stat -c %s "$f") bytes, mode $(stat -c %a "$f"))"; fi
  done
else
  echo "Files in $PWD: (empty)"
fi
# Small text files verbatim: a simulator cannot guess what `cat` would print.
find . -name .git -prune -o -type f -size -2049c -print | sort | head -n 20 | while read -r f; do
  if grep -Iq . "$f" 2>/dev/null; then echo "--- ${f#./} ---"; head -n 40 "$f"; fi
done | head -c 6000
find . -maxdepth 3 -name .git -type d | sort | while read -r g; do
  r=$(dirname "$g"); r=${r#./}; r=${r:-.}
  echo "Git repository $r: on branch $(git -C "$r" branch --show-current); branches: $(git -C "$r" branch --format='%(refname:short)' | paste -sd' ')"
  git -C "$r" log --all --oneline -n 10 | sed 's/^/  /'
done
"""
# Tool versions depend only on the root filesystem: asked once, then read from a file.
_TOOLS_SCRIPT = r"""
echo "Tools:"
for t in "python3 --version" "gcc --version" "make --version" "git --version" "vim --version" \
         "nano --version" "less --version" "tmux -V" "jq --version" "sqlite3 --version" "curl --version"; do
  set -- $t
  command -v "$1" >/dev/null && echo "  $1: $($t 2>&1 | head -n1 | cut -c1-60)"
done
"""


def tool_versions(sandbox: Sandbox) -> str:
    cached = sandbox.rootfs.parent / f"{sandbox.rootfs.name}.tools.txt"
    if cached.exists():
        return cached.read_text()
    text = sandbox.run(_TOOLS_SCRIPT).stdout
    cached.write_text(text)
    return text


@dataclass(frozen=True)
class TerminalConfig:
    """Screen size, timing and resource limits of the terminal environment."""

    width: int = 160
    height: int = 40
    max_lines: int = 200
    """Longest observation; a command printing more shows its last lines, like a screen."""
    poll_s: float = 0.02
    settle_s: float = 0.01
    """Wait after the prompt is drawn before reading the screen."""
    max_steps: int = 100
    episode_seconds: float = 900.0
    """Wall time of one episode; after it, steps report ``truncated``."""
    limits: Limits = field(default_factory=Limits)
    rootfs: Path | None = None
    hostname: str = "sandbox"


class TerminalEnv(Env):
    """A real Debian shell; see the module docstring for what reset and step return."""

    domain = "terminal"
    deterministic_reset = True

    def __init__(self, config: TerminalConfig | None = None, **overrides: Any):
        self.config = TerminalConfig(**{**(config.__dict__ if config else {}), **overrides})
        self.rootfs = self.config.rootfs or ensure_rootfs(build=False)
        self.sandbox: Sandbox | None = None
        self.pane: TmuxPane | None = None
        self.task: TerminalTask | None = None
        self.initial_state = ""
        self.steps = 0
        self._t0 = 0.0
        self._usage = None
        self._anchor = 0

    # -- episode -------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        self.close()
        self.task = _task_from(options or {}, seed or 0)
        sb = self.sandbox = Sandbox(limits=self.config.limits, rootfs=self.rootfs, hostname=self.config.hostname)
        files = {"/root/.bashrc": BASHRC, **{_abs(p): c for p, c in self.task.files.items()}}
        _write_tree(sb, files, {_abs(p): m for p, m in self.task.modes.items()})
        if self.task.setup:
            res = sb.run(self.task.setup, env=self.task.env, timeout=60)
            if not res.ok:
                raise RuntimeError(f"task {self.task.name} setup failed ({res.exit_code}): {res.stderr[-500:]}")
        self.initial_state = (sb.run(_STATE_SCRIPT).stdout + tool_versions(sb)
                              + sb.run(_FILES_SCRIPT).stdout).strip()
        if self.task.env:
            self.initial_state += "\nEnvironment variables set: " + ", ".join(
                f"{k}={v}" for k, v in sorted(self.task.env.items()))
        self.pane = TmuxPane(sb, width=self.config.width, height=self.config.height, env=self.task.env)
        self.steps = 0
        self._t0 = time.monotonic()
        title = self._wait_prompt("", 10.0)
        self._usage = sb.usage()
        return Reset(self.pane.screen(), {"task": self.task.name, "prompt": title is not None})

    def step(self, action: str) -> Step:
        if self.pane is None or self.sandbox is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        t0 = time.monotonic()
        before = self.pane.state()
        try:
            batches = parse_action(action)
        except ActionError as exc:
            return Step(self.pane.screen(), 0.0, False, self._truncated(), {"error": str(exc)})
        prompt_back = False
        for batch in batches:
            title = self.pane.state().title
            for args in batch.tmux_commands():
                self.pane.send(args)
            prompt_back = self._wait(batch, title)
        after = self.pane.state()
        obs = self._observe(before, after)
        info = {"duration_s": round(time.monotonic() - t0, 3), "prompt": prompt_back or self._at_prompt(after),
                "fullscreen": after.alternate, "events": self._events(after)}
        return Step(obs, 0.0, after.dead, self._truncated(), info)

    def fork(self) -> TerminalEnv:
        """A second live episode whose files equal this one's now, with a fresh shell in
        /workspace (shell variables, history and running processes are not copied)."""
        if self.sandbox is None or self.task is None:
            raise RuntimeError("call reset() before fork()")
        child = TerminalEnv(self.config, rootfs=self.rootfs)
        child.task, child.initial_state = self.task, self.initial_state
        child.sandbox = self.sandbox.fork()
        try:
            child.pane = TmuxPane(child.sandbox, width=self.config.width, height=self.config.height, env=self.task.env)
            child._t0 = time.monotonic()
            child._wait_prompt("", 10.0)
            child._usage = child.sandbox.usage()
        except BaseException:
            child.close()
            raise
        return child

    def context(self) -> dict[str, Any]:
        return {"task_description": self.task.description if self.task else "",
                "initial_state": self.initial_state or None}

    def close(self) -> None:
        if self.pane is not None:
            self.pane.close()
            self.pane = None
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    # -- waiting and reading ---------------------------------------------------------

    def _wait(self, batch: Batch, title: str) -> bool:
        """Wait the batch's duration, or less when it brought a shell prompt back."""
        return self._wait_prompt(title, batch.duration, early=batch.submits) is not None

    def _wait_prompt(self, title: str, duration: float, early: bool = True) -> str | None:
        assert self.pane is not None
        deadline = time.monotonic() + duration
        while True:
            st = self.pane.state()
            if st.dead:
                return None
            # The title changes just before bash draws the prompt: wait for the prompt
            # text itself (cursor off column 0), then a moment for the screen to settle.
            if early and st.title != title and self._at_prompt(st) and (st.cursor_x > 0 or time.monotonic() >= deadline):
                time.sleep(self.config.settle_s)
                return st.title
            if time.monotonic() >= deadline:
                return None
            time.sleep(min(self.config.poll_s, max(deadline - time.monotonic(), 0)))

    @staticmethod
    def _at_prompt(st: PaneState) -> bool:
        # The shell sets this title as it draws a prompt and replaces it when a command starts.
        return st.title.startswith(TITLE_PREFIX) and not st.alternate

    def _observe(self, before: PaneState, after: PaneState) -> str:
        assert self.pane is not None
        if not before.alternate:
            self._anchor = before.row
        if after.alternate or after.row < self._anchor:
            return self.pane.screen()  # a full-screen program, or the screen was cleared
        # Output since the command line that was current before the step; after a
        # full-screen program exits, since the line that started it.
        text = self.pane.lines_since(self._anchor, after)
        lines = text.split("\n")
        return "\n".join(lines[-self.config.max_lines:])

    def _events(self, st: PaneState) -> list[str]:
        """Limits hit during the step, so an episode reports what the sandbox contained."""
        assert self.sandbox is not None
        now, prev = self.sandbox.usage(), self._usage
        self._usage = now
        events = []
        if prev is not None and now.oom_kills > prev.oom_kills:
            events.append("memory_limit")
        if prev is not None and now.pids_denied > prev.pids_denied:
            events.append("process_limit")
        if now.disk_full:
            events.append("disk_full")
        if not self._at_prompt(st) and not st.dead:
            events.append("still_running")
        if st.dead:
            events.append("shell_exited")
        return events

    def _truncated(self) -> bool:
        return self.steps >= self.config.max_steps or time.monotonic() - self._t0 > self.config.episode_seconds


def _task_from(options: dict[str, Any], seed: int) -> TerminalTask:
    from agentworld.envs.terminal.tasks import TEMPLATES

    task = options.get("task")
    if isinstance(task, TerminalTask):
        return task
    if isinstance(task, dict):
        return TerminalTask(**task)
    if isinstance(task, str):
        return TEMPLATES.get(task).instance(seed)
    return TerminalTask(name="free", description=options.get("description", "Use the terminal."),
                        files=options.get("files", {}), env=options.get("env", {}),
                        setup=options.get("setup", ""))


def _abs(path: str) -> str:
    return path if path.startswith("/") else f"/workspace/{path}"


def _write_tree(sb: Sandbox, files: dict[str, str], modes: dict[str, int]) -> None:
    """Write all files with one process in the sandbox (a tar archive on stdin)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, content in files.items():
            data = content.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), modes.get(path, 0o644), int(time.time())
            tar.addfile(info, io.BytesIO(data))
    res = sb.run(["tar", "-x", "-C", "/", "--no-same-owner"], input=buf.getvalue(), cwd="/")
    if not res.ok:
        raise RuntimeError(f"could not write task files: {res.stderr.strip()}")
