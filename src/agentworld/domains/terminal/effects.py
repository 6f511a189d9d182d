"""What a terminal action did: files written, read and removed, directories, the working
directory, environment variables, SQL run through a database client.

Forms whose effect is certain are read exactly (``cd``, ``export``/``unset``,
``echo``/``printf``/``cat`` redirects and here-documents, ``> f`` truncation, ``tee`` of a
known text, ``rm``, ``mkdir``, ``touch``, ``cp``, ``mv``, ``sed -i`` with plain ``s``
commands; reads by ``cat``/``head``/``tail``/``less``/``more``/``nl``/``grep``). Every
other write the shell can make is reported as ``unknown`` for the path it touches (a
program's output redirected into a file, a ``tee`` of a program's output, a glob or an
unexpanded variable, an editor, ``git stash``/``checkout``, archives, a local script
run), so a
ledger drops what it knew there instead of keeping a stale fact. When the screen says
the command failed, which of several commands failed is unknowable: nothing is reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from agentworld.domains.effects import Effect, Effects
from agentworld.domains.sql import is_sql
from agentworld.domains.terminal.shell import commands, expand, pipeline, redirects

FAILED = re.compile(r"permission denied|no space left|read-only file system|no such file|cannot|not found", re.IGNORECASE)
"""Output that says the command's effect did not happen."""
NO_SUCH = re.compile(r"no such file or directory", re.IGNORECASE)
"""Output that says a path does not exist."""
_READERS = ("cat", "head", "tail", "less", "more", "nl")
# Words that start a compound command's body: the command proper follows them.
_KEYWORDS = frozenset({"do", "then", "else", "{", "(", "!", "time", "sudo", "nohup", "exec"})
# A word the shell would still expand (a glob, a variable this reading does not know, a
# command substitution): the paths it names are unknown.
_UNRESOLVED = re.compile(r"[*?\[]|\$|`")
# Text that still holds an expansion this reading did not make.
_UNEXPANDED = re.compile(r"\$[\w{(]|`")
# git subcommands that rewrite the work tree.
_GIT_WRITES = frozenset({"stash", "checkout", "switch", "reset", "restore", "pull", "merge", "rebase", "apply", "am",
                         "clean", "mv", "rm", "revert", "cherry-pick", "clone", "init"})
# Programs that run a script file (which may write anywhere below the working directory).
_INTERPRETERS = frozenset({"bash", "sh", "zsh", "python", "python3", "node", "perl", "ruby", "php"})


def effects(action: str, observation: str = "", *, env: Mapping[str, str] | None = None) -> Effects:
    """The effects of ``action`` given the screen it produced (``""``: not known yet).
    ``env`` holds the variables set before it, for ``$VAR`` expansion; variables the
    action sets expand in its later commands."""
    if observation and FAILED.search(observation):
        return Effects(failed=True)
    env = dict(env or {})
    ops: list[Effect] = []
    for argv, heredoc in commands(action):
        words, outs = redirects([expand(w, env) for w in argv])
        while words and words[0] in _KEYWORDS:
            words = words[1:]
        ops += [Effect("sql", value=w) for w in words[1:] if is_sql(w)]
        if heredoc is not None and is_sql(heredoc):
            ops.append(Effect("sql", value=heredoc))
        stages = pipeline(words)
        upstream: str | None = None  # what the previous stage printed, when certain
        for i, stage in enumerate(stages):
            ops += _command_effects(stage, env, upstream)
            upstream = _printed(stage, heredoc if i == 0 else None, env, upstream)
        for target, append, stdout in outs:
            if target != "/dev/null":
                text = upstream if stdout else None
                if stdout and not stages:
                    text = ""  # `> f`: truncation
                if stdout and len(stages) == 1 and stages[0][0] == "cat" and heredoc is None and not append:
                    srcs = [a for a in stages[0][1:] if not a.startswith("-")]
                    if len(srcs) == 1 and not _UNRESOLVED.search(srcs[0]):
                        ops.append(Effect("copy", target, source=srcs[0]))
                        continue
                ops.append(_write(target, text, append))
    return Effects(ops)


def _write(target: str, text: str | None, append: bool) -> Effect:
    if text is None or _UNRESOLVED.search(target):
        return Effect("unknown", _unknown_root(target))
    return Effect("write", target, text, append=append)


def _unknown_root(path: str) -> str:
    """The part of ``path`` before anything the shell would expand (``.``: all of it)."""
    m = _UNRESOLVED.search(path)
    if m is None:
        return path
    head = path[: m.start()]
    return head[: head.rfind("/") + 1] or "." if "/" in head else "."


def _printed(words: list[str], heredoc: str | None, env: Mapping[str, str], upstream: str | None) -> str | None:
    """What a stage prints to stdout, when that is certain (``echo``, ``printf`` with a
    plain format, ``cat`` of a here-document or of its input); None otherwise."""
    cmd = words[0] if words else ""
    text: str | None = None
    if cmd == "echo":
        args = [w for w in words[1:] if w not in ("-e", "-E")]
        text = " ".join(a for a in args if a != "-n") + ("" if "-n" in args else "\n")
    elif cmd == "printf" and len(words) == 2 and "%" not in words[1]:
        text = words[1].replace("\\n", "\n").replace("\\t", "\t")
    elif cmd == "cat" and len(words) == 1:
        text = heredoc if heredoc is not None else upstream
        if heredoc is not None:
            text = expand(heredoc, dict(env))
    elif cmd == "tee":
        text = upstream
    return None if text is None or _UNEXPANDED.search(text) else text


def _operands(words: list[str], valued: str = "") -> list[str]:
    """The non-option words of a command; options in ``valued`` take the next word."""
    out, skip = [], False
    for w in words[1:]:
        if skip:
            skip = False
        elif w.startswith("-") and len(w) > 1:
            skip = len(w) == 2 and w[1] in valued
        else:
            out.append(w)
    return out


def _paths(kind: str, words: list[str], valued: str = "") -> list[Effect]:
    """One ``kind`` effect per operand; an operand the shell would still expand is unknown."""
    return [Effect("unknown", _unknown_root(w)) if _UNRESOLVED.search(w) else Effect(kind, w)  # type: ignore[arg-type]
            for w in _operands(words, valued)]


def _command_effects(words: list[str], env: dict[str, str], upstream: str | None = None) -> list[Effect]:
    """The effects of one pipeline stage; ``export``/``unset`` update ``env``; ``upstream``
    is what the previous stage printed (for ``tee``), when certain."""
    cmd = words[0] if words else ""
    handler = _HANDLERS.get(cmd)
    if handler is not None:
        return handler(words, env, upstream)
    if cmd in _READERS:
        return [Effect("read", w) for w in _operands(words, "nc")]
    if cmd == "grep" and len(args := _operands(words, "efmABC")) > 1:
        return [Effect("read", w) for w in args[1:]]  # the first is the pattern
    if cmd.startswith("./") or cmd == "make" or (cmd in _INTERPRETERS and _operands(words)):
        # A script's writes are unknowable from the command line: below the working
        # directory nothing known stays certain.
        return [Effect("unknown", ".")]
    return []


def _cd(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    dest = words[1] if len(words) > 1 else "~"
    return [] if dest == "-" or _UNRESOLVED.search(dest) else [Effect("cd", dest)]


def _export(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    out = []
    for k, _, v in (w.partition("=") for w in words[1:] if "=" in w):
        env[k] = v
        out.append(Effect("setenv", k, v))
    return out


def _unset(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    for w in words[1:]:
        env.pop(w, None)
    return [Effect("unsetenv", w) for w in words[1:]]


def _copy_or_move(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    args = _operands(words, "tS")
    if len(args) < 2:
        return []
    *srcs, dest = args
    if _UNRESOLVED.search(dest):
        return [Effect("unknown", _unknown_root(dest))]
    # Several sources: the destination is a directory (a trailing "/" says so to a ledger).
    dest = dest if len(srcs) == 1 or dest.endswith("/") else dest + "/"
    kind = "copy" if words[0] == "cp" else "move"
    out: list[Effect] = []
    for src in srcs:
        if _UNRESOLVED.search(src):
            out.append(Effect("unknown", _unknown_root(src) if kind == "move" else dest))
            out.append(Effect("unknown", dest))
        else:
            out.append(Effect(kind, dest, source=src))  # type: ignore[arg-type]
    return out


def _tee(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    append = any(w in ("-a", "--append") for w in words[1:])
    return [_write(w, upstream, append) for w in _operands(words)]


def _sed(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    """``sed -i`` edits its files in place (with ``-i.bak`` the old content is kept there)."""
    scripts: list[str] = []
    files: list[str] = []
    suffix: str | None = None
    ere = exact = False
    it = iter(words[1:])
    for w in it:
        if w in ("-e", "--expression"):
            scripts.append(next(it, ""))
        elif w.startswith("--expression="):
            scripts.append(w.split("=", 1)[1])
        elif w in ("-E", "-r", "--regexp-extended"):
            ere = True
        elif w == "--in-place" or w.startswith("--in-place="):
            suffix = w.partition("=")[2]
        elif w.startswith("-i"):
            suffix = w[2:]
        elif w in ("-f", "--file") or w.startswith("-") and w not in ("-s", "--separate", "-u", "-z", "--posix"):
            exact = True  # a script file, or a mode this reading does not apply: the edit is unknown
            if w in ("-f", "--file"):
                next(it, "")
        else:
            files.append(w)
    if suffix is None:
        return []  # no in-place edit: sed only prints
    if not scripts and files and not exact:
        scripts.append(files.pop(0))
    out: list[Effect] = []
    for f in files:
        if _UNRESOLVED.search(f):
            out.append(Effect("unknown", _unknown_root(f)))
            continue
        if suffix:
            out.append(Effect("copy", f + suffix, source=f))
        out.append(Effect("unknown", f) if exact or not scripts else
                   Effect("sed", f, "\n".join(scripts), source="-E" if ere else ""))
    return out


def _git(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    sub = next((w for w in words[1:] if not w.startswith("-")), "")
    return [Effect("unknown", ".")] if sub in _GIT_WRITES else []


def _compress(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    """``gzip f`` replaces f by f.gz, ``gunzip f.gz`` the reverse (``-k`` keeps the input,
    ``-c`` only prints); the new file's content is not read."""
    flags = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
    if "c" in flags or "t" in flags or "l" in flags:
        return []
    unpack = words[0] in ("gunzip", "unxz", "bunzip2") or "d" in flags
    ext = {"gzip": ".gz", "gunzip": ".gz", "xz": ".xz", "unxz": ".xz", "bzip2": ".bz2", "bunzip2": ".bz2"}[words[0]]
    out: list[Effect] = []
    for f in _operands(words, "S"):
        if _UNRESOLVED.search(f):
            out.append(Effect("unknown", _unknown_root(f)))
            continue
        made = f[: -len(ext)] if unpack and f.endswith(ext) else f + ext
        out.append(Effect("unknown", made))
        if "k" not in flags:
            out.append(Effect("delete", f))
    return out


def _unpack(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    """``tar x``/``unzip`` write files this reading does not list."""
    extracts = words[0] == "unzip" or any(w == "--extract" or (not w.startswith("--") and "x" in w) for w in words[1:2])
    return [Effect("unknown", ".")] if extracts else []


def _truncate(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    empty = any(w in ("-s0", "--size=0") for w in words) or "-s 0" in " ".join(words)
    return [Effect("write", f, "") if empty else Effect("unknown", f) for f in _operands(words, "sr")]


def _dd(words: list[str], env: dict[str, str], upstream: str | None) -> list[Effect]:
    return [Effect("unknown", w[3:]) for w in words[1:] if w.startswith("of=")]


def _simple(kind: str, valued: str = "") -> Callable[[list[str], dict[str, str], str | None], list[Effect]]:
    return lambda words, env, upstream: _paths(kind, words, valued)


_HANDLERS: dict[str, Callable[[list[str], dict[str, str], str | None], list[Effect]]] = {
    "cd": _cd, "export": _export, "unset": _unset,
    "rm": _simple("delete"), "rmdir": _simple("delete"), "unlink": _simple("delete"),
    "mkdir": _simple("mkdir", "m"), "touch": _simple("touch", "drt"),
    "ln": lambda words, env, upstream: [Effect("unknown", _unknown_root(a)) for a in _operands(words, "tS")[-1:]],
    "cp": _copy_or_move, "mv": _copy_or_move, "tee": _tee, "sed": _sed, "git": _git,
    "gzip": _compress, "gunzip": _compress, "xz": _compress, "unxz": _compress, "bzip2": _compress, "bunzip2": _compress,
    # An editor saves what the keystrokes typed after it made: the file becomes unknown.
    **{editor: _simple("unknown") for editor in ("vim", "vi", "nvim", "nano", "emacs", "ed", "pico")},
    "tar": _unpack, "unzip": _unpack, "truncate": _truncate, "dd": _dd,
}
