"""A tmux server whose single pane runs a shell inside a sandbox.

The server runs on the host but inside the sandbox's cgroup (it is started through the
cgroup join), so what it spends drawing an episode's output counts against that
episode's CPU, memory and process limits. Its socket stays outside the sandbox's root,
so nothing inside can reach or replace it. The host talks to it through one
long-lived control-mode client (``tmux -C``): a query costs a line on a pipe instead
of a process start.

Prompt detection needs no screen scraping: the shell's prompt ends with a title
escape carrying a token the host writes (fresh for every batch that can bring the
prompt back) into a read-only folder of the sandbox, and tmux reports the title. A
command that prints an old marker, or any marker it did not read from that file,
does not end a step.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from agentworld.envs.sandbox import Sandbox, SandboxUnavailable

TITLE_PREFIX = "aw-prompt "
RUNNING_TITLE = "aw-running"
TOKEN_DIR = "/run/agentworld"
"""Sandbox folder (read-only, host-written) holding the current prompt token."""
# Written to /root/.bashrc: a plain root prompt that ends with the title marker, so the
# title changes only once the prompt text itself has been drawn.
BASHRC = (
    "# ~/.bashrc: executed by bash(1) for non-login shells.\n"
    "PS1='\\u@\\h:\\w\\$ \\[\\e]2;" + TITLE_PREFIX + "${__aw_token}\\a\\]'\n"
    "HISTFILE=/root/.bash_history\n"
    "PROMPT_COMMAND='read -r __aw_token < " + TOKEN_DIR + "/prompt 2>/dev/null'\n"
    "PS0='\\e]2;" + RUNNING_TITLE + "\\a'\n"
)
_CLEAN_ENV = {"TERM": "xterm-256color"}


class PaneGone(RuntimeError):
    """The tmux server (and so the episode's terminal) is no longer there."""


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
    dead_status: int | None = None
    """Exit status of the pane's process once it is dead."""

    @property
    def row(self) -> int:
        """Absolute row of the cursor counted from the top of the scrollback."""
        return self.history + self.cursor_y


class TmuxPane:
    """Start, type into, and read one sandboxed shell pane."""

    # tmux prints control characters as "_", so fields are split on "|" with the free-text title last.
    _FORMAT = ("#{pane_current_command}|#{pane_dead}|#{pane_dead_status}|#{history_size}|#{cursor_y}|#{cursor_x}|"
               "#{alternate_on}|#{pane_title}")

    def __init__(self, sandbox: Sandbox, *, width: int = 160, height: int = 40, history: int = 5000,
                 env: dict[str, str] | None = None, cwd: str = "/workspace", timeout: float = 10.0):
        if shutil.which("tmux") is None:
            raise SandboxUnavailable("tmux is not installed", "apt-get install -y tmux")
        self.sandbox = sandbox
        self.width, self.height = width, height
        self.timeout = timeout
        self.socket = sandbox.dir / "tmux.sock"  # outside the sandbox's root: unreachable from inside
        self.tokens = sandbox.dir / "prompt"
        self.tokens.mkdir(mode=0o755, exist_ok=True)
        self.token = self.new_token()
        self._lock = threading.Lock()
        self._buf = bytearray()
        self._client: subprocess.Popen[bytes] | None = None
        # `script` gives the shell a terminal from the sandbox's own devpts, so `tty`, `ps`
        # and job control see /dev/pts/0 as on any machine, not the host's terminal.
        inner = ["/usr/bin/script", "-q", "-e", "-c", "/bin/bash -i", "/dev/null"]
        shell = sandbox.argv(inner, tty=True, env=env, cwd=cwd, ro_binds={TOKEN_DIR: self.tokens})
        join = sandbox.cgroup.join_script() if sandbox.cgroup is not None else ""
        start = (f'{join}exec tmux -S {shlex.quote(str(self.socket))} -f /dev/null new-session -d -s main '
                 f'-x {width} -y {height} "$1"')
        r = subprocess.run(["/bin/sh", "-c", start, "tmux", shlex.join(shell)], capture_output=True, text=True,
                           env=_CLEAN_ENV)
        if r.returncode != 0:
            raise RuntimeError(f"tmux new-session failed: {r.stderr.strip()}")
        try:
            self._attach()
            self.command("refresh-client -f no-output")  # the screen is read on demand
            for opt, value in (("status", "off"), ("history-limit", str(history)), ("remain-on-exit", "on"),
                               ("escape-time", "0"), ("scroll-on-clear", "off")):
                self.command(f"set-option -g {opt} {value}", check=False)
            self.command("set-option -w -t main remain-on-exit on", check=False)
        except BaseException:
            self.close()
            raise

    # -- the control client ----------------------------------------------------------

    def _attach(self) -> None:
        self._client = subprocess.Popen(["tmux", "-S", str(self.socket), "-C", "attach-session", "-t", "main"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        env=_CLEAN_ENV)
        deadline = time.monotonic() + self.timeout
        # Commands sent before the client is attached fail with "no current client".
        while not self._readline(deadline).startswith("%session-changed"):
            pass

    def _readline(self, deadline: float) -> str:
        assert self._client is not None and self._client.stdout is not None
        fd = self._client.stdout.fileno()
        while (nl := self._buf.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise PaneGone(f"tmux did not answer within {self.timeout:.0f} s (pending: {bytes(self._buf)[-200:]!r})")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise PaneGone("the tmux server exited")
            self._buf += chunk
        line = bytes(self._buf[:nl])
        del self._buf[: nl + 1]
        return line.decode(errors="replace")

    def command(self, line: str, *, check: bool = True) -> list[str]:
        """Run one tmux command through the control client; its output lines."""
        with self._lock:
            if self._client is None or self._client.stdin is None:
                raise PaneGone("the pane is closed")
            try:
                self._client.stdin.write(line.encode() + b"\n")
                self._client.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise PaneGone("the tmux server exited") from exc
            deadline = time.monotonic() + self.timeout
            # Replies come in order, each between "%begin T N 1" and "%end T N 1" (or
            # "%error"); flag 0 blocks and notifications are not ours.
            while True:
                head = self._readline(deadline)
                if head.startswith("%begin ") and head.endswith(" 1"):
                    break
            tail = head[len("%begin "):]
            out: list[str] = []
            while True:
                text = self._readline(deadline)
                if text == f"%end {tail}":
                    return out
                if text == f"%error {tail}":
                    if check:
                        raise RuntimeError(f"tmux {line.split()[0]} failed: {' '.join(out)}")
                    return out
                out.append(text)

    # -- typing and reading ------------------------------------------------------------

    def new_token(self) -> str:
        """Make (and hand to the shell) the token its next prompt will carry."""
        token = secrets.token_hex(8)
        tmp = self.tokens / ".prompt.tmp"
        tmp.write_text(token + "\n")
        tmp.chmod(0o644)
        os.replace(tmp, self.tokens / "prompt")
        self.token = token
        return token

    def state(self) -> PaneState:
        out = self.command(f"display-message -p -t main '{self._FORMAT}'")
        fields = (out[0] if out else "").split("|", 7)
        if len(fields) != 8:
            raise PaneGone(f"unexpected pane state {out!r}")
        cmd, dead, status, hist, cy, cx, alt, title = fields
        return PaneState(title, cmd, dead == "1", int(hist or 0), int(cy or 0), int(cx or 0), alt == "1",
                         int(status) if dead == "1" and status.lstrip("-").isdigit() else None)

    def type(self, commands: list[str]) -> None:
        """Send ``send-keys`` commands (see :meth:`Batch.tmux_commands`) to the pane."""
        for c in commands:
            self.command(c.replace("send-keys ", "send-keys -t main ", 1))

    def screen(self) -> str:
        """The visible screen, trailing blank lines removed."""
        return _trim("\n".join(self.command("capture-pane -p -t main")))

    def lines_since(self, row: int, state: PaneState) -> str:
        """Text from absolute row ``row`` to the cursor (wrapped lines joined)."""
        start = max(row - state.history, -state.history)
        return _trim("\n".join(self.command(f"capture-pane -p -J -t main -S {start} -E {state.cursor_y}")))

    def rows(self, first: int, last: int, state: PaneState) -> list[str]:
        """Physical rows ``first..last`` (absolute, counted from the top of the scrollback),
        trailing spaces removed; rows no longer stored come back shorter."""
        start, end = first - state.history, last - state.history
        return [ln.rstrip() for ln in self.command(f"capture-pane -p -t main -S {start} -E {end}")]

    def server_pid(self) -> int | None:
        try:
            out = self.command("display-message -p '#{pid}'")
            return int(out[0]) if out else None
        except (PaneGone, RuntimeError, ValueError):
            return None

    def reap(self) -> None:
        """Make the server collect its exited pane process (and so learn its status)."""
        pid = self.server_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCHLD)

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.stdin.write(b"kill-server\n")  # type: ignore[union-attr]
                client.stdin.close()  # type: ignore[union-attr]
            except (BrokenPipeError, ValueError, OSError):
                pass
            try:
                client.wait(timeout=5)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait()
            if client.stdout is not None:
                client.stdout.close()
        if self.socket.exists():
            # A hung server dies with the sandbox's cgroup.
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, env=_CLEAN_ENV,
                               timeout=5)


def _trim(text: str) -> str:
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)

