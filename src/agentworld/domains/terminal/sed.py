"""``sed -i`` applied to content a ledger knows: the ``s`` command, exactly or not at all.

Only scripts whose result is certain are applied: ``s`` commands without an address,
flags ``g``/``I``, POSIX basic (or, with ``-E``, extended) patterns made of literals,
``.``, bracket lists, anchors and groups, with at most one quantifier and none on a group.
Anything else (another command, an address, a backreference, ``[[:alpha:]]``, ``\\w``,
``\\U`` in the replacement, a pattern that matches the empty string) gives None: the
caller drops what it knew. The quantifier bound keeps the cost linear-times-line-length
on agent-written content (a nested quantifier could backtrack without end).
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: lines longer than this are not edited with a quantified pattern (its cost grows with
#: the square of the line): the content becomes unknown instead
MAX_SED_LINE = 2000
#: content longer than this is not edited: it becomes unknown
MAX_SED_CONTENT = 1 << 16
_FLAGS = re.compile(r"^(?P<flags>[gI]*)\s*$")
_INTERVAL = re.compile(r"\d+(,\d*)?")

Sub = tuple[re.Pattern[str], Callable[[re.Match[str]], str], int, bool]
"""A compiled ``s`` command: pattern, replacement, count (0: all), whether it is quantified."""


def apply_sed(script: str, content: str, *, ere: bool = False) -> str | None:
    """``content`` after ``sed -i`` ran ``script`` (commands one a line or split by ``;``)
    on it, or None when the result is not certain."""
    if len(content) > MAX_SED_CONTENT:
        return None
    subs = parse(script, ere)
    if subs is None:
        return None
    lines = content.split("\n")
    tail = lines.pop() if content.endswith("\n") else None  # the "" after the last newline
    out = []
    for line in lines:
        for rx, repl, count, quantified in subs:
            if quantified and len(line) > MAX_SED_LINE:
                return None
            line = rx.sub(repl, line, count=count)
        out.append(line)
    return "\n".join(out if tail is None else [*out, tail])


def parse(script: str, ere: bool = False) -> list[Sub] | None:
    """The ``s`` commands of ``script``, or None when it holds anything else."""
    subs: list[Sub] = []
    i, n = 0, len(script)
    while i < n:
        if script[i] in " \t\n;":
            i += 1
            continue
        if script[i] != "s" or i + 1 >= n or script[i + 1] in "\\\n ":
            return None
        parts, i = _split_s(script, i + 2, script[i + 1])
        end = min([k for k in (script.find(";", i), script.find("\n", i)) if k >= 0] or [n])
        flags = _FLAGS.match(script[i:end])
        sub = _compile(parts, flags.group("flags"), ere) if parts and flags else None
        if sub is None:
            return None
        subs.append(sub)
        i = end
    return subs


def _compile(parts: list[str], flags: str, ere: bool) -> Sub | None:
    translated = _regex(parts[0], ere)
    repl = _replacement(parts[1])
    if translated is None or repl is None:
        return None
    try:
        pattern = re.compile(translated[0], re.I if "I" in flags else 0)
    except re.error:
        return None
    if pattern.search("") is not None or repl[1] > pattern.groups:
        return None  # empty matches are placed differently by GNU sed; a missing group
    return pattern, repl[0], 0 if "g" in flags else 1, translated[1]


def _split_s(script: str, i: int, delim: str) -> tuple[list[str] | None, int]:
    """Pattern and replacement of ``s<d>pattern<d>replacement<d>`` (``\\<d>`` is the
    delimiter itself), and the position after the closing delimiter."""
    parts: list[str] = []
    cur: list[str] = []
    while i < len(script) and len(parts) < 2:
        c = script[i]
        if c == "\\" and i + 1 < len(script):
            nxt = script[i + 1]
            cur.append(nxt if nxt == delim and delim not in "&\\" else c + nxt)
            i += 2
        elif c == delim:
            parts.append("".join(cur))
            cur, i = [], i + 1
        elif c == "\n":
            return None, i
        else:
            cur.append(c)
            i += 1
    return (parts if len(parts) == 2 and parts[0] else None), i


def _tokens(p: str, ere: bool) -> list[tuple[str, str]] | None:
    """``p`` as ``(python text, kind)`` tokens, kind one of ``lit``, ``quant``, ``open``,
    ``close``, ``alt``, ``anchor``; None for forms not read exactly."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(p):
        escaped = p[i] == "\\"
        if escaped and (i + 1 >= len(p) or p[i + 1] not in ".*[]^$\\/+?(){}|&-t"):
            return None  # a backreference, \w, \b...: not read
        c = p[i + 1] if escaped else p[i]
        i += 2 if escaped else 1
        # BRE: `\(` `\{` `\+` are operators and `(` a literal; ERE the other way round.
        operator = escaped != ere
        at_start = not out or out[-1][1] in ("open", "alt", "anchor")
        if escaped and c == "t":
            out.append(("\\t", "lit"))
        elif operator and c in "()|":
            out.append((c, {"(": "open", ")": "close", "|": "alt"}[c]))
        elif (operator and c in "+?") or (not escaped and c == "*" and not at_start):
            out.append((c, "quant"))
        elif operator and c == "{":
            close = p.find("}" if ere else "\\}", i)
            if close < 0 or not _INTERVAL.fullmatch(p[i:close]):
                return None
            out.append(("{" + p[i:close] + "}", "quant"))
            i = close + (1 if ere else 2)
        elif not escaped and c == "[":
            close = p.find("]", i + (p[i : i + 1] == "^") + 1)
            body = p[i:close]
            if close < 0 or "[" in body:
                return None
            neg = body.startswith("^")
            out.append(("[" + "^" * neg + re.sub(r"([\\\[])", r"\\\1", body[neg:]) + "]", "lit"))
            i = close + 1
        elif not escaped and c == ".":
            out.append((".", "lit"))
        elif not escaped and c == "^" and (not out or ere):
            out.append(("^", "anchor"))
        elif not escaped and c == "$" and (i == len(p) or ere):
            out.append(("$", "anchor"))
        else:
            out.append((re.escape(c), "lit"))
    return out


def _regex(p: str, ere: bool) -> tuple[str, bool] | None:
    """A POSIX regexp as a Python one and whether it is quantified; None when not read
    exactly (alternation) or when its cost is not bounded (a quantified group, two
    quantifiers)."""
    tokens = _tokens(p, ere)
    if tokens is None:
        return None
    quants = [k for k, (_, kind) in enumerate(tokens) if kind == "quant"]
    if any(kind == "alt" for _, kind in tokens):
        return None  # POSIX takes the longest alternative, Python the first
    if len(quants) > 1 or any(k == 0 or tokens[k - 1][1] in ("close", "open", "alt", "anchor", "quant") for k in quants):
        return None
    return "".join(t for t, _ in tokens), bool(quants)


def _replacement(r: str) -> tuple[Callable[[re.Match[str]], str], int] | None:
    """sed's replacement (``&`` the match, ``\\1``..``\\9`` groups, ``\\n`` a newline) as a
    function of the match, and the highest group it names; None for case conversions."""
    parts: list[str | int] = []  # literal text, or a group number (0: the whole match)
    i = 0
    while i < len(r):
        c = r[i]
        if c == "\\" and i + 1 < len(r):
            nxt = r[i + 1]
            i += 2
            if nxt in "ULulE":
                return None
            parts.append(int(nxt) if nxt.isdigit() else {"n": "\n", "t": "\t"}.get(nxt, nxt))
        else:
            parts.append(0 if c == "&" else c)
            i += 1

    def expand(m: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)

    return expand, max((p for p in parts if isinstance(p, int)), default=0)
