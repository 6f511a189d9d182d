"""A tmux server on the host whose single pane runs a shell inside a sandbox.

The server and its socket stay outside the sandbox, so nothing inside can reach or
replace them; only the pane's process tree lives in the sandbox. Prompt detection
needs no screen scraping: the shell's ``PROMPT_COMMAND`` sets the pane title to a fresh
value each time a prompt is drawn, and tmux reports the title.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from agentworld.envs.sandbox import Sandbox, SandboxUnavailable

TITLE_PREFIX = "aw-prompt "
RUNNING_TITLE = "aw-running"
# Written to /root/.bashrc: a plain root prompt plus the title marker.
BASHRC = (
    "# ~/.bashrc: executed by bash(1) for non-login shells.\n"
    "PS1='\\u@\\h:\\w\\$ '\n"
    "HISTFILE=/root/.bash_history\n"
    "PROMPT_COMMAND='printf \"\\033]2;" + TITLE_PREFIX + "%s\\007\" \"$EPOCHREALTIME\"'\n"
    "PS0='\\e]2;" + RUNNING_TITLE + "\\a'\n"
)


@dataclass(frozen=True)
class PaneState:
    title: str
    command: str
    """Name of the pane's foreground process (``bash`` at a prompt)."""
    dead: bool
    history: int
    cursor_y: int
    cursor_x: int
    alternate: bool
    """A full-screen program (vim, less, top) holds the alternate screen."""

    @property
    def row(self) -> int:
        """Absolute row of the cursor counted from the top of the scrollback."""
        return self.history + self.cursor_y


class TmuxPane:
    """Start, type into, and read one sandboxed shell pane."""

    # tmux prints control characters as "_", so fields are split on "|" with the free-text title last.
    _FORMAT = "#{pane_current_command}|#{pane_dead}|#{history_size}|#{cursor_y}|#{cursor_x}|#{alternate_on}|#{pane_title}"

    def __init__(self, sandbox: Sandbox, *, width: int = 160, height: int = 40, history: int = 5000,
                 env: dict[str, str] | None = None, cwd: str = "/workspace"):
        if shutil.which("tmux") is None:
            raise SandboxUnavailable("tmux is not installed", "apt-get install -y tmux")
        self.sandbox = sandbox
        self.width, self.height = width, height
        self.socket = sandbox.dir / "tmux.sock"  # outside the sandbox's root: unreachable from inside
        # `script` gives the shell a terminal from the sandbox's own devpts, so `tty`, `ps`
        # and job control see /dev/pts/0 as on any machine, not the host's terminal.
        inner = ["/usr/bin/script", "-q", "-e", "-c", "/bin/bash -i", "/dev/null"]
        shell = sandbox.argv(inner, tty=True, env=env, cwd=cwd)
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height),
                   shlex.join(shell))
        for opt, value in (("status", "off"), ("history-limit", str(history)), ("remain-on-exit", "on"),
                           ("escape-time", "0"), ("scroll-on-clear", "off")):
            self._tmux("set-option", "-g", opt, value, check=False)
        self._tmux("set-option", "-w", "-t", "main", "remain-on-exit", "on", check=False)

    def _tmux(self, *args: str, check: bool = True) -> str:
        # A clean environment: nothing of the host's leaks into the pane's session.
        r = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm-256color"})
        if check and r.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {r.stderr.strip()}")
        return r.stdout

    def state(self) -> PaneState:
        out = self._tmux("display-message", "-p", "-t", "main", self._FORMAT).rstrip("\n")
        cmd, dead, hist, cy, cx, alt, title = out.split("|", 6)
        return PaneState(title, cmd, dead == "1", int(hist or 0), int(cy or 0), int(cx or 0), alt == "1")

    def send(self, args: list[str]) -> None:
        self._tmux(args[0], "-t", "main", *args[1:])

    def screen(self) -> str:
        """The visible screen, trailing blank lines removed."""
        return _trim(self._tmux("capture-pane", "-p", "-t", "main"))

    def lines_since(self, row: int, state: PaneState) -> str:
        """Text from absolute row ``row`` to the cursor (wrapped lines joined)."""
        start = max(row - state.history, -state.history)
        return _trim(self._tmux("capture-pane", "-p", "-J", "-t", "main", "-S", str(start), "-E", str(state.cursor_y)))

    def close(self) -> None:
        if self.socket.exists():
            self._tmux("kill-server", check=False)


def _trim(text: str) -> str:
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)
