"""The terminal observation format: where a screen shows a shell prompt.

A prompt is ``user@host:directory`` and a sigil (``#`` for root, ``$`` for users, ``%``
for zsh), e.g. ``root@sandbox:/workspace#``. One pattern serves every reader of screens
(the ledger's working directory, the rule scorer, perturbations, scenarios).
"""

from __future__ import annotations

import re

_USER_HOST = r"(?P<who>[\w.-]+@[\w.-]+)"
_DIR = r"(?P<dir>[^\s#$%]*)"
_CORE = rf"{_USER_HOST}:{_DIR}[#$%]"

PROMPT_LINE = re.compile(rf"^{_CORE}[ \t]*$", re.MULTILINE)
"""A line that is only a prompt: the shell waits for the next command."""
PROMPT_START = re.compile(rf"^{_CORE}(?: |$)", re.MULTILINE)
"""A prompt at the start of a line, with or without a command typed after it."""


def last_prompt(text: str) -> str | None:
    """The last shell prompt on a screen (a bare one or with a command after it), e.g.
    ``root@sandbox:/workspace#``."""
    for line in reversed(text.rstrip().splitlines()):
        m = PROMPT_START.match(line.strip())
        if m:
            return m.group(0).rstrip()
    return None


def final_prompt_line(observation: str) -> str:
    """The observation's last line when it is a bare prompt (the command finished), else ``""``."""
    lines = observation.rstrip("\n").splitlines()
    return lines[-1] if lines and PROMPT_LINE.match(lines[-1]) else ""


def strip_final_prompt(observation: str) -> str:
    """The observation without its final bare prompt line (a command still running)."""
    lines = observation.rstrip("\n").splitlines()
    if lines and PROMPT_LINE.match(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines)


def prompt_dirs(text: str) -> list[str]:
    """Directories of the bare prompts on a screen, in order."""
    return [m.group("dir") for m in PROMPT_LINE.finditer(text)]


def first_prompt_dir(text: str) -> str | None:
    """Directory of the first prompt on a screen (the one the command was typed at)."""
    m = PROMPT_START.search(text)
    return m.group("dir") if m else None
