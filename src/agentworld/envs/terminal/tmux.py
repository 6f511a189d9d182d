"""A tmux server whose single pane runs a shell inside a sandbox.

The server runs on the host but inside the sandbox's cgroup (it is started through the
cgroup join), so what it spends drawing an episode's output counts against that
episode's CPU, memory and process limits. Its socket stays outside the sandbox's root,
so nothing inside can reach or replace it. The host talks to it through one
long-lived control-mode client (``tmux -C``): a query costs a line on a pipe instead
of a process start. Nothing the pane prints travels on that pipe: the screen is
captured into a tmux buffer that tmux saves to a host file outside the sandbox's root,
and the few format fields read through the pipe hold no line breaks, so output that
imitates tmux's ``%begin``/``%end`` reply markers stays text on the screen.

Prompt detection needs no screen scraping: the shell's prompt ends with a title
escape carrying a token the host writes (fresh for every batch that can bring the
prompt back) into a read-only folder of the sandbox, and tmux reports the title. The
title says when the prompt has been drawn; sandboxed code can read the token, so
whether the shell really waits for a key comes from the kernel (:class:`Shell`): the
terminal's foreground group is the shell's own and the shell sleeps in a read of its
terminal, which no command still running can arrange.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
import warnings
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
_BUFFER = "aw-screen"
"""tmux buffer the screen is captured into (then saved to a host file)."""
_SCREEN_FILE_MAX = 4 << 20
# Syscalls a shell sleeps in while it waits for a key: readline's pselect, the `read`
# builtin's read, and their relatives.
_INPUT_SYSCALLS = {
    "x86_64": frozenset({0, 7, 19, 23, 270, 271}),  # read poll readv select pselect6 ppoll
    "aarch64": frozenset({63, 65, 72, 73}),  # read readv pselect6 ppoll
}


class PaneGone(RuntimeError):
    """The tmux server (and so the episode's terminal) is no longer there."""


@dataclass(frozen=True)
class PaneState:
    title: str
    command: str
    """Name of the pane's foreground process as tmux sees it (the sandbox launcher: the
    shell runs on a terminal of its own inside), characters outside ``!``..``{`` as ``_``."""
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

    # One line, split on "|" with the free-text title last: tmux drops control characters
    # from titles, and the command name (a process's argv[0], which may hold line breaks
    # or "|") keeps only "!".."{".
    _FORMAT = ("#{s/[^!-{]/_/:pane_current_command}|#{pane_dead}|#{pane_dead_status}|#{history_size}|#{cursor_y}|"
               "#{cursor_x}|#{alternate_on}|#{pane_title}")

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
        # The screen comes back through this file: host-only (the sandbox cannot reach
        # sandbox.dir), made here so that only root can read it. tmux appends to it
        # (truncating a file on disk costs more than the whole capture) and the host
        # empties it now and then.
        screen = sandbox.dir / "screen"
        self._screen = os.open(screen, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self._save = f"save-buffer -a -b {_BUFFER} {shlex.quote(str(screen))}"
        self._lock = threading.Lock()
        self._buf = bytearray()
        self._last = -1
        """Number of the last reply read: tmux numbers commands in increasing order."""
        self._client: subprocess.Popen[bytes] | None = None
        self._shell: Shell | None = None
        # `script` gives the shell a terminal from the sandbox's own devpts, so `tty`, `ps`
        # and job control see /dev/pts/0 as on any machine, not the host's terminal.
        inner = ["/usr/bin/script", "-q", "-e", "-c", "/bin/bash -i", "/dev/null"]
        shell = sandbox.argv(inner, tty=True, env=env, cwd=cwd, ro_binds={TOKEN_DIR: self.tokens})
        join = sandbox.cgroup.join_script() if sandbox.cgroup is not None else ""
        # history-limit applies to panes made after it is set: set it before the session
        # (set later, the pane kept tmux's default 2,000 lines).
        start = (f'{join}exec tmux -S {shlex.quote(str(self.socket))} -f /dev/null start-server \\; '
                 f'set-option -g history-limit {int(history)} \\; new-session -d -s main '
                 f'-x {width} -y {height} "$1"')
        r = subprocess.run(["/bin/sh", "-c", start, "tmux", shlex.join(shell)], capture_output=True, text=True,
                           env=_CLEAN_ENV)
        if r.returncode != 0:
            os.close(self._screen)
            raise RuntimeError(f"tmux new-session failed: {r.stderr.strip()}")
        try:
            self._attach()
            self.command("refresh-client -f no-output")  # the screen is read on demand
            # No renames: a window name comes from a process's argv[0] and would reach the
            # control client in notifications.
            for opt, value in (("status", "off"), ("remain-on-exit", "on"),
                               ("escape-time", "0"), ("scroll-on-clear", "off"), ("automatic-rename", "off"),
                               ("allow-rename", "off")):
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
        return self.commands([line], check=check)[0]

    def commands(self, lines: list[str], *, check: bool = True) -> list[list[str]]:
        """Run tmux commands in one round trip; the output lines of each. Every reply is
        read before a failure is raised, so the next command reads its own."""
        if any("\n" in ln or "\r" in ln for ln in lines):
            # One line is one command to tmux: a line break would split it in two and put
            # every later reply out of step.
            raise ValueError(f"a tmux command line may not contain a line break: {lines!r}")
        with self._lock:
            if self._client is None or self._client.stdin is None:
                raise PaneGone("the pane is closed")
            try:
                self._client.stdin.write("".join(f"{ln}\n" for ln in lines).encode())
                self._client.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise PaneGone("the tmux server exited") from exc
            deadline = time.monotonic() + self.timeout
            replies = [self._reply(deadline) for _ in lines]
        for line, (ok, out) in zip(lines, replies, strict=True):
            if check and not ok:
                raise RuntimeError(f"tmux {line.split()[0]} failed: {' '.join(out)}")
        return [out for _, out in replies]

    def _reply(self, deadline: float) -> tuple[bool, list[str]]:
        # Replies come in order, each between "%begin T N 1" and "%end T N 1" (or
        # "%error"); flag 0 blocks and notifications are not ours. Command output never
        # holds pane text (see the module docstring), and N only grows.
        while True:
            head = self._readline(deadline)
            parts = head.split(" ")
            if len(parts) == 4 and parts[0] == "%begin" and parts[3] == "1" and parts[2].isdigit() \
                    and int(parts[2]) > self._last:
                break
        self._last = int(parts[2])
        tail = head[len("%begin "):]
        out: list[str] = []
        while True:
            text = self._readline(deadline)
            if text == f"%end {tail}":
                return True, out
            if text == f"%error {tail}":
                return False, out
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

    def capture(self, args: str = "") -> list[str]:
        """``capture-pane`` lines, read from the host file tmux saves them to: pane text
        never passes the control client, where it could pose as tmux's replies."""
        start = os.fstat(self._screen).st_size
        if start > _SCREEN_FILE_MAX:
            os.ftruncate(self._screen, 0)
            start = 0
        self.commands([f"capture-pane -b {_BUFFER} -t main {args}", self._save])
        # Every reply is in, so tmux has appended the capture and nothing else.
        data = os.pread(self._screen, os.fstat(self._screen).st_size - start, start)
        return data.decode(errors="replace").removesuffix("\n").split("\n")

    def screen(self) -> str:
        """The visible screen, trailing blank lines removed."""
        return _trim("\n".join(self.capture()))

    def lines_since(self, row: int, state: PaneState) -> str:
        """Text from absolute row ``row`` to the cursor (wrapped lines joined)."""
        start = max(row - state.history, -state.history)
        return _trim("\n".join(self.capture(f"-J -S {start} -E {state.cursor_y}")))

    def rows(self, first: int, last: int, state: PaneState) -> list[str]:
        """Physical rows ``first..last`` (absolute, counted from the top of the scrollback),
        trailing spaces removed; rows no longer stored come back shorter."""
        start, end = first - state.history, last - state.history
        return [ln.rstrip() for ln in self.capture(f"-S {start} -E {end}")]

    def waiting_for_input(self) -> bool:
        """Whether the kernel shows the shell waiting for a key (see :class:`Shell`);
        False while its process is not known yet or after it is gone."""
        if self._shell is None:
            try:
                out = self.command("display-message -p -t main '#{pane_pid}'")
                self._shell = Shell.find(int(out[0]))
            except (RuntimeError, ValueError, IndexError):
                return False
        return self._shell is not None and self._shell.waiting()

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
        fd, self._screen = self._screen, -1
        if fd >= 0:
            os.close(fd)
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


class Shell:
    """The pane's interactive shell as the host's /proc shows it, which nothing inside
    the sandbox can write.

    The shell waits for a key when it holds its terminal (the foreground process group
    is its own: the session leader's) and sleeps in a read, select or poll with its
    standard input still that terminal. While a command runs the shell sleeps in
    ``wait4`` instead, even if the command hands the terminal back (``tcsetpgrp``) and
    prints the prompt's title. The same holds after ``exec`` replaces the shell (the
    pid stays); once the process is gone it never waits again.
    """

    def __init__(self, pid: int, start: int, tty: tuple[int, int] | None, syscalls: frozenset[int] | None):
        self.pid, self.start, self.tty, self.syscalls = pid, start, tty, syscalls

    @classmethod
    def find(cls, pane_pid: int, limit: int = 64) -> Shell | None:
        """The first session leader below the pane's process (the launcher, then
        ``script``, then the shell it starts on a terminal of its own), or None."""
        queue = _children(pane_pid)
        for i in range(limit):
            if i >= len(queue):
                break
            pid = queue[i]
            st = _stat(pid)
            if st is None:
                continue
            if st[2] == pid:  # its own session: the shell (script gave it the new terminal)
                return cls._probe(pid, st[4])
            queue += _children(pid)
        return None

    @classmethod
    def _probe(cls, pid: int, start: int) -> Shell:
        syscalls = _INPUT_SYSCALLS.get(platform.machine())
        tty = None
        try:
            _read(f"/proc/{pid}/syscall")
            fd0 = os.stat(f"/proc/{pid}/fd/0")
            tty = fd0.st_dev, fd0.st_ino
        except OSError:
            syscalls = None
        if syscalls is None:
            warnings.warn("cannot see which syscall the sandboxed shell sleeps in (needs CAP_SYS_PTRACE and "
                          "x86-64 or arm64): a step ends when the prompt title carries its token and the shell "
                          "holds its terminal", RuntimeWarning, stacklevel=4)
        return cls(pid, start, tty, syscalls)

    def waiting(self) -> bool:
        st = _stat(self.pid)
        if st is None or st[4] != self.start or st[0] != "S" or st[3] != self.pid:
            return False
        if self.syscalls is None:
            return True
        try:
            call = _read(f"/proc/{self.pid}/syscall").split(b" ", 1)[0]
            fd0 = os.stat(f"/proc/{self.pid}/fd/0")
        except OSError:
            return False
        return call.isdigit() and int(call) in self.syscalls and (fd0.st_dev, fd0.st_ino) == self.tty


def _stat(pid: int) -> tuple[str, int, int, int, int] | None:
    """State, process group, session, terminal foreground group and start time of a
    host pid (pids in the host's numbering), or None once it is gone."""
    try:
        raw = _read(f"/proc/{pid}/stat")
    except OSError:
        return None
    f = raw[raw.rindex(b")") + 2:].split()
    return f[0].decode(), int(f[2]), int(f[3]), int(f[5]), int(f[19])


def _children(pid: int) -> list[int]:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for t in tasks:
        with contextlib.suppress(OSError):
            out += [int(c) for c in _read(f"/proc/{pid}/task/{t}/children").split()]
    return out


def _read(path: str) -> bytes:
    """A small /proc file, with a third of what ``Path.read_bytes`` costs."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _trim(text: str) -> str:
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)

