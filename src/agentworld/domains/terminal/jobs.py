"""Bash job control on a terminal screen: the notices the shell prints about background jobs.

A command ended by ``&`` starts a job: bash prints ``[N] PID`` and gives it the
number one above the highest job still alive. When a job ends, the next prompt (or
``wait``/``jobs``) reports it once: ``[N]+  Done  CMD``, ``Terminated``, ``Killed``,
``Exit 2``; ``jobs`` lists the live ones as ``Running``/``Stopped`` (``jobs -l`` with
the PID after the number). :func:`session_jobs` reads which jobs a session has alive; :func:`job_contradictions`
finds notices a session rules out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentworld.domains.terminal.keys import typed_text

LAUNCH = re.compile(r"^\[(?P<n>\d+)\]\s+(?P<pid>\d+)\b")
"""A job started: ``[2] 4`` (what follows, if anything, is not bash's)."""
STATUS = re.compile(
    r"^\[(?P<n>\d+)\][+-]?\s+(?:\d+\s+)?(?P<status>Done|Terminated|Killed|Running|Stopped|Exit \d+)(?:\(\w+\))?"
    r"\s+(?P<cmd>\S.*)$"
)
"""A job's state with its command: ``[1]+  Terminated  sleep 53`` (``jobs -l``: with the PID)."""
ENDED = ("Done", "Terminated", "Killed", "Exit")
_JOB_AND_PID = re.compile(r"^\[\d+\][+-]?\s+\d+\s+\S")
"""A job number and a PID with more after them: only ``jobs -l``'s state-and-command line."""


def malformed_job_lines(lines: Iterable[str]) -> list[str]:
    """Lines with a job number and PID that bash prints in no form: neither the launch
    notice alone (``[2] 4``) nor a state with the command (``[1]+ 3 Running sleep 53 &``);
    ``[1] 1 Done`` is neither."""
    return [ln for ln in (x.strip() for x in lines) if _JOB_AND_PID.match(ln) and not STATUS.match(ln)]


def _launched(action: str) -> list[str]:
    """The commands an action runs in the background, each ended by a lone ``&`` (not
    ``&&``, nor a redirection ``2>&1``/``&>``) outside quotes, back to the last ``;``:
    ``sleep 53 & echo started`` starts ``sleep 53``, ``cd x; make &`` starts ``make``,
    ``cd x && make &`` and ``(sleep 1; echo done) &`` start the whole list or group."""
    out = []
    for line in typed_text(action).split("\n"):
        quote, depth, start, i = "", 0, 0, 0
        while i < len(line):
            ch = line[i]
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "()":
                depth += 1 if ch == "(" else -1
            elif line.startswith("&&", i):
                i += 1  # an and-list goes to the background as a whole: ``a && b &``
            elif depth == 0 and ch == ";":
                start = i + 1
            elif depth == 0 and ch == "&" and not line.startswith("&>", i) and line[i - 1 : i] != ">":
                if line[start:i].strip():
                    out.append(line[start:i].strip())
                start = i + 1
            i += 1
    return out


def session_jobs(history: Iterable[tuple[str, str]]) -> dict[int, str]:
    """The jobs still alive after ``history``: number -> command line. A job is known by
    its launch notice on the screen of the action that typed it (the action's background
    commands in order); an ended notice removes it."""
    alive: dict[int, str] = {}
    for action, observation in history:
        launched = iter(_launched(action))
        for line in observation.splitlines():
            line = line.strip()
            if (m := STATUS.match(line)) and m.group("status").startswith(ENDED):
                alive.pop(int(m.group("n")), None)
            elif (m := LAUNCH.match(line)) and not STATUS.match(line) and (cmd := next(launched, None)):
                alive[int(m.group("n"))] = cmd
    return alive


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def job_contradictions(lines: Iterable[str], history: list[tuple[str, str]], action: str) -> list[str]:
    """Job notices among ``lines`` (a screen's output) that the session rules out: a state
    notice for a command the session never typed (bash prints the job's own command line;
    a job may also be a foreground command suspended with C-z), or this action's launch
    numbered as a job still alive."""
    typed = [ln for a in (*(a for a, _ in history), action) for ln in typed_text(a).split("\n") if ln.strip()]
    alive = session_jobs(history)
    launches = bool(_launched(action))
    out = []
    for line in lines:
        line = line.strip()
        if m := STATUS.match(line):
            cmd = _words(m.group("cmd"))
            if cmd and not any(cmd <= _words(t) for t in typed):
                out.append(f"job notice for {m.group('cmd')[:40]!r}, a command the session never ran")
        elif (m := LAUNCH.match(line)) and launches and int(m.group("n")) in alive:
            n = int(m.group("n"))
            out.append(f"new job numbered [{n}] while job {n} ({alive[n][:30]!r}) is still running")
    return out
