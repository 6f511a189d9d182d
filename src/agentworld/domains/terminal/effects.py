"""What a terminal action did: files written, read and removed, directories, the working
directory, environment variables, SQL run through a database client.

Only forms whose effect is certain are read (``cd``, ``export``/``unset``,
``echo``/``printf`` redirects, here-documents, ``rm``, ``mkdir``, ``touch``, ``cp``,
``mv``; reads by ``cat``/``head``/``tail``/``less``/``more``/``nl``/``grep``). When the
screen says the command failed, which of several commands failed is unknowable: nothing
is reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agentworld.domains.effects import Effect, Effects
from agentworld.domains.sql import is_sql
from agentworld.domains.terminal.shell import commands, expand, redirect

FAILED = re.compile(r"permission denied|no space left|read-only file system|no such file|cannot|not found", re.IGNORECASE)
"""Output that says the command's effect did not happen."""
NO_SUCH = re.compile(r"no such file or directory", re.IGNORECASE)
"""Output that says a path does not exist."""
_READERS = ("cat", "head", "tail", "less", "more", "nl")


def effects(action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """The effects of ``action`` given the screen it produced (``""``: not known yet).
    ``env`` holds the variables set before it, for ``$VAR`` expansion; variables the
    action sets expand in its later commands."""
    if observation and FAILED.search(observation):
        return Effects(failed=True)
    env = dict(env or {})
    ops: list[Effect] = []
    for argv, heredoc in commands(action):
        words, target, append = redirect([expand(w, env) for w in argv])
        ops += [Effect("sql", value=w) for w in words[1:] if is_sql(w)]
        if heredoc is not None and is_sql(heredoc):
            ops.append(Effect("sql", value=heredoc))
        if target and target != "/dev/null":
            ops += _redirected_write(words, target, append, heredoc)
        else:
            ops += _command_effects(words, env)
    return Effects(ops)


def _redirected_write(words: list[str], target: str, append: bool, heredoc: str | None) -> list[Effect]:
    """What ``echo``/``printf``/``cat <<EOF`` wrote into the redirect ``target``."""
    cmd = words[0] if words else ""
    if cmd == "echo":
        args = [w for w in words[1:] if w != "-e"]
        text = " ".join(a for a in args if a != "-n") + ("" if "-n" in args else "\n")
        return [Effect("write", target, text, append=append)]
    if cmd == "printf" and len(words) > 1:
        return [Effect("write", target, words[1].replace("\\n", "\n"), append=append)]
    if cmd == "cat" and heredoc is not None:
        return [Effect("write", target, heredoc, append=append)]
    return []


def _command_effects(words: list[str], env: dict[str, str]) -> list[Effect]:
    """The effects of one command without a redirect; ``export``/``unset`` update ``env``."""
    cmd = words[0] if words else ""
    args = [w for w in words[1:] if not w.startswith("-")]
    if cmd == "cd":
        dest = words[1] if len(words) > 1 else "~"
        return [] if dest == "-" else [Effect("cd", dest)]
    if cmd == "export":
        out = []
        for k, _, v in (w.partition("=") for w in words[1:] if "=" in w):
            env[k] = v
            out.append(Effect("setenv", k, v))
        return out
    if cmd == "unset":
        for w in words[1:]:
            env.pop(w, None)
        return [Effect("unsetenv", w) for w in words[1:]]
    if cmd in ("rm", "mkdir", "touch"):
        kind = "delete" if cmd == "rm" else cmd
        return [Effect(kind, w) for w in args]  # type: ignore[arg-type]
    if cmd in ("cp", "mv") and len(words) == 3:
        return [Effect("copy" if cmd == "cp" else "move", words[2], source=words[1])]
    if cmd in _READERS:
        return [Effect("read", w) for w in args]
    if cmd == "grep" and len(args) > 1:
        return [Effect("read", w) for w in args[1:]]  # the first is the pattern
    return []
