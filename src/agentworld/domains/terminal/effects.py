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
        argv = [expand(w, env) for w in argv]
        words, target, append = redirect(argv)
        cmd = words[0] if words else ""
        ops += [Effect("sql", value=w) for w in words[1:] if is_sql(w)]
        if heredoc is not None and is_sql(heredoc):
            ops.append(Effect("sql", value=heredoc))
        if target and target != "/dev/null":
            if cmd == "echo":
                args = [w for w in words[1:] if w != "-e"]
                newline = "-n" not in args
                text = " ".join(a for a in args if a != "-n") + ("\n" if newline else "")
                ops.append(Effect("write", target, text, append=append))
            elif cmd == "printf" and len(words) > 1:
                ops.append(Effect("write", target, words[1].replace("\\n", "\n"), append=append))
            elif cmd == "cat" and heredoc is not None:
                ops.append(Effect("write", target, heredoc, append=append))
            continue
        args = [w for w in words[1:] if not w.startswith("-")]
        if cmd == "cd":
            dest = words[1] if len(words) > 1 else "~"
            if dest != "-":
                ops.append(Effect("cd", dest))
        elif cmd == "export":
            for w in words[1:]:
                if "=" in w:
                    k, v = w.split("=", 1)
                    env[k] = v
                    ops.append(Effect("setenv", k, v))
        elif cmd == "unset":
            for w in words[1:]:
                env.pop(w, None)
                ops.append(Effect("unsetenv", w))
        elif cmd in ("rm", "mkdir", "touch"):
            kind = "delete" if cmd == "rm" else cmd
            ops += [Effect(kind, w) for w in args]  # type: ignore[arg-type]
        elif cmd in ("cp", "mv") and len(words) == 3:
            ops.append(Effect("copy" if cmd == "cp" else "move", words[2], source=words[1]))
        elif cmd in _READERS:
            ops += [Effect("read", w) for w in args]
        elif cmd == "grep" and len(args) > 1:
            ops += [Effect("read", w) for w in args[1:]]  # the first is the pattern
    return Effects(ops)
