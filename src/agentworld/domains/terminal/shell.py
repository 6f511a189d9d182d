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


def redirect(argv: list[str]) -> tuple[list[str], str | None, bool]:
    """Split ``argv`` at an output redirect: ``(words, target, append)``."""
    for j, w in enumerate(argv):
        if w in (">", ">>") and j + 1 < len(argv):
            return argv[:j], argv[j + 1], w == ">>"
        if w.startswith(">>") or w.startswith(">"):
            op = ">>" if w.startswith(">>") else ">"
            return argv[:j], w[len(op):], op == ">>"
    return argv, None, False
