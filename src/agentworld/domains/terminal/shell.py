"""Shell command lines as the terminal domain reads them: words, simple commands,
here-documents, variable expansion and output redirects.

Only what a POSIX shell does with certainty is read; lines that do not parse are
skipped, so their effect counts as unknown. Everything here runs in linear time on agent
input (a huge action costs a bounded amount of parsing).
"""

from __future__ import annotations

import re

from agentworld.domains.terminal.keys import typed_text

_HEREDOC = re.compile(r"^(?P<cmd>.*?)<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)(?P<rest>.*)$")
_VAR = re.compile(r"\$(\w+)|\$\{(\w+)\}")
# One piece of a shell word per match; every branch consumes input, so splitting is linear.
_PIECE = re.compile(r"""(?P<ws>\s+)|'(?P<sq>[^']*)'|"(?P<dq>(?:[^"\\]|\\.)*)"|\\(?P<esc>.)|(?P<plain>[^\s'"\\]+)""", re.S)
_SEPARATOR = re.compile(r"&&|\|\||;")
# The same pieces plus command separators; a lone ``&`` or ``|`` stays inside a word.
_PIECE_OR_SEPARATOR = re.compile(
    r"""(?P<sep>&&|\|\||;)|(?P<ws>\s+)|'(?P<sq>[^']*)'|"(?P<dq>(?:[^"\\]|\\.)*)"|\\(?P<esc>.)"""
    r"""|(?P<plain>(?:[^\s'"\\;&|]|&(?!&)|\|(?!\|))+)""",
    re.S,
)
_DQ_ESCAPE = re.compile(r"""\\([\\"$`])""")


def split_words(line: str) -> list[str] | None:
    """``line`` split into words the way a POSIX shell reads them (quotes, backslashes, a
    ``#`` comment at the start of a word), in time linear in the line; None when a quote or
    a backslash is left open. ``shlex.split`` does the same in quadratic time, which let one
    large action stall the simulator."""
    found = _scan(line, _PIECE)
    return None if found is None else (found[0] if found else [])


def split_commands(line: str) -> list[list[str]] | None:
    """The simple commands of one line (split at ``;``, ``&&`` and ``||`` outside quotes),
    each as its words; None when a quote or a backslash is left open."""
    return _scan(line, _PIECE_OR_SEPARATOR)


def _scan(line: str, pieces: re.Pattern[str]) -> list[list[str]] | None:
    commands: list[list[str]] = []
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    pos, end = 0, len(line)
    while pos < end:
        m = pieces.match(line, pos)
        if m is None:
            return None  # an open quote or a trailing backslash
        pos = m.end()
        kind = m.lastgroup
        if kind in ("ws", "sep"):
            if in_word:
                words.append("".join(parts))
                parts, in_word = [], False
            if kind == "sep" and words:
                commands.append(words)
                words = []
            continue
        if kind == "plain" and not in_word and m.group("plain").startswith("#"):
            break  # a comment runs to the end of the line
        in_word = True
        if kind == "dq":
            parts.append(_DQ_ESCAPE.sub(r"\1", m.group("dq")))
        else:
            parts.append(m.group(kind or "plain"))
    if in_word:
        words.append("".join(parts))
    if words or not commands:
        commands.append(words)
    return commands


#: the typed text the ledger reads per action; what follows (whole lines past it) counts as
#: unknown, so one huge action costs a bounded amount of parsing
MAX_PARSE_CHARS = 1 << 15


def commands(action: str) -> list[tuple[list[str], str | None]]:
    """Simple commands of the typed lines as ``(argv, heredoc_body)``; unparsable lines skipped.
    Only the whole lines within the first :data:`MAX_PARSE_CHARS` characters are read."""
    text = typed_text(action)
    cut = len(text) > MAX_PARSE_CHARS
    if cut:
        text = text[: text.rfind("\n", 0, MAX_PARSE_CHARS) + 1]
    lines = text.split("\n")
    out: list[tuple[list[str], str | None]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        body = None
        m = _HEREDOC.match(line)
        if m:
            tag, collected = m.group("tag"), []
            while i < len(lines) and lines[i].strip() != tag:
                collected.append(lines[i])
                i += 1
            if cut and i >= len(lines):
                break  # the body runs past what was read: its content is unknown
            i += 1
            body = "\n".join(collected) + "\n"
            line = m.group("cmd") + m.group("rest")
        found = split_commands(line)
        if found is None:  # an open quote: read the parts that close, as a shell would not
            found = [w for part in _SEPARATOR.split(line) if (w := split_words(part))]
        out.extend((argv, body) for argv in found if argv)
    return out


def expand(word: str, env: dict[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), word)


# ``>``, ``>>``, ``1>``, ``2>>``, ``&>``, ``>|``, with the target attached or as the next word;
# ``2>&1``/``>&2`` duplicate a stream and write no file.
_REDIRECT = re.compile(r"^(?P<fd>[012&]?)(?P<op>>>|>\|?)(?P<target>.*)$", re.S)
_DUP = re.compile(r"^[012]?>&[012-]$")


def redirects(argv: list[str]) -> tuple[list[str], list[tuple[str, bool, bool]]]:
    """``argv`` without its output redirects, and each redirect as ``(target, append,
    stdout)``: ``stdout`` is False for a file that gets only the error stream (``2>``)."""
    words: list[str] = []
    found: list[tuple[str, bool, bool]] = []
    j = 0
    while j < len(argv):
        w = argv[j]
        j += 1
        m = _REDIRECT.match(w) if ">" in w[:3] else None
        if m is None or _DUP.match(w):
            if not _DUP.match(w):
                words.append(w)
            continue
        target = m.group("target")
        if not target and j < len(argv):
            target, j = argv[j], j + 1
        if target:
            found.append((target, m.group("op") == ">>", m.group("fd") != "2"))
    return words, found


def redirect(argv: list[str]) -> tuple[list[str], str | None, bool]:
    """Split ``argv`` at its output redirects: ``(words, the stdout target, append)``."""
    words, found = redirects(argv)
    out = next(((t, a) for t, a, stdout in found if stdout), None)
    return (words, out[0], out[1]) if out else (words, None, False)


def pipeline(words: list[str]) -> list[list[str]]:
    """The stages of a pipeline (``a | b``), each as its words; empty stages dropped."""
    stages: list[list[str]] = [[]]
    for w in words:
        if w == "|":
            stages.append([])
        else:
            stages[-1].append(w)
    return [s for s in stages if s]
