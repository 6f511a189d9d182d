"""SQL statements in actions (a database tool's query argument, a ``sqlite3`` command line):
rows inserted or deleted, and the rows a query asks for.

The exact reading (:func:`insert`, :func:`delete`, :func:`update`, :func:`select`) takes
only the simple forms whose effect is certain: ``INSERT INTO t [(cols)] VALUES (...), (...)``
with literal values (without a column list the values are known by position only),
``DELETE FROM t [WHERE col = literal]``, ``UPDATE t SET col = literal, ... [WHERE col =
literal]`` and ``SELECT ... FROM t`` with no WHERE clause or a single ``col = literal``
condition (and no joins, limits or aggregates). :func:`written_table` names the table any
other write changes (its effect is unknown). :func:`statements` splits a script. The
loose reading (:func:`inserted_literals`, :func:`queried_table`) takes any INSERT's
literal values and the first SELECT's table, for checks that only need the values.
"""

from __future__ import annotations

import re
from typing import Any

# Agent input: every pattern here runs in linear time. A quoted literal may not be
# followed by a quote (``''`` inside it is the escape), so it has exactly one parse and
# repetitions of literals cannot backtrack exponentially; trailing ``;`` and blanks are
# matched as ``\s*(?:;\s*)?$``, never as two adjacent ``\s*``.
_STR = r"'(?:[^']|'')*'(?!')"
_LIT = rf"{_STR}|-?\d+(?:\.\d+)?"
_INSERT = re.compile(r"^\s*insert\s+into\s+[`\"]?(\w+)[`\"]?\s*(?:\(([^)]*)\)\s*)?values\s*", re.I)
_DELETE = re.compile(rf"^\s*delete\s+from\s+[`\"]?(\w+)[`\"]?(?:\s+where\s+(\w+)\s*=\s*({_LIT}))?\s*(?:;\s*)?$", re.I | re.S)
_UPDATE = re.compile(r"^\s*update\s+[`\"]?(\w+)[`\"]?\s+set\s+", re.I)
_ASSIGN = re.compile(rf"\s*[`\"]?(\w+)[`\"]?\s*=\s*({_LIT}|null)\s*", re.I)
_UPDATE_TAIL = re.compile(rf"(?:where\s+(\w+)\s*=\s*({_LIT})\s*)?(?:;\s*)?", re.I | re.S)
_WRITE = re.compile(r"\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|delete\s+from|update(?:\s+or\s+\w+)?|drop\s+table"
                    r"(?:\s+if\s+exists)?|alter\s+table|truncate(?:\s+table)?)\s+[`\"]?(\w+)", re.I)
_STATEMENT_PART = re.compile(rf"{_STR}|[^';]+|;", re.S)
_SELECT = re.compile(r"^\s*select\s+", re.I)
_FROM = re.compile(r"(?<=\s)from\s+", re.I)
_SELECT_TAIL = re.compile(rf"[`\"]?(\w+)[`\"]?(?:\s+where\s+(\w+)\s*=\s*({_LIT}))?\s*(?:;\s*)?", re.I | re.S)
_COMPLEX = re.compile(r"\b(join|limit|group\s+by|count|sum|avg|min|max|distinct|offset)\b", re.I)
_WHERE = re.compile(r"\bwhere\b", re.I)
_AND_OR = re.compile(r"\b(and|or)\b", re.I)
_TUPLE = re.compile(rf"\(((?:{_STR}|[^()'])*)\)")
_LITERAL = re.compile(rf"\s*({_STR}|-?\d+(?:\.\d+)?|null)\s*(?:,|$)", re.I)
#: longer statements are left alone (their effect counts as unknown)
MAX_SQL_CHARS = 1 << 16

def literal(text: str) -> str | None:
    text = text.strip()
    if text.lower() == "null":
        return None
    return text[1:-1].replace("''", "'") if text.startswith("'") else text


def values(body: str) -> list[str | None] | None:
    out, pos = [], 0
    while pos < len(body):
        m = _LITERAL.match(body, pos)
        if not m:
            return None  # an expression, not a literal: effect unknown
        out.append(literal(m.group(1)))
        pos = m.end()
    return out


_STATEMENT = re.compile(r"\s*(insert|delete|select|update|replace\s+into|drop\s+table|alter\s+table|truncate)\b", re.I)


def is_sql(text: str) -> bool:
    """Whether ``text`` starts like an SQL statement that reads or changes rows."""
    return _STATEMENT.match(text) is not None


def sql_of(args: dict[str, Any]) -> str | None:
    """The SQL statement among a tool call's string arguments, if any."""
    for v in args.values():
        if isinstance(v, str) and is_sql(v):
            return v
    return None


def statements(text: str) -> list[str]:
    """The statements of a script, split at ``;`` outside quoted literals (each without
    its ``;``; blank ones dropped). Linear: each piece is one match."""
    out, cur = [], []
    for m in _STATEMENT_PART.finditer(text):
        if m.group(0) == ";":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(m.group(0))
    out.append("".join(cur))
    return [st for st in out if st.strip()]


def insert(sql: str) -> tuple[str, list[str] | None, str] | None:
    """``(table, columns, rows text)`` of a simple INSERT; columns None without a column
    list (the values are then known by position)."""
    m = _INSERT.match(sql)
    if not m:
        return None
    rest = sql[m.end():].rstrip()
    rest = rest[:-1] if rest.endswith(";") else rest
    cols = None if m.group(2) is None else [c.strip(' `"').lower() for c in m.group(2).split(",")]
    return (m.group(1).lower(), cols, rest) if rest else None


def update(sql: str) -> tuple[str, dict[str, str | None], str, str | None] | None:
    """``(table, column -> new value, where column, where value)`` of a simple UPDATE
    (where column ``""``: every row)."""
    m = _UPDATE.match(sql)
    if not m:
        return None
    assigned: dict[str, str | None] = {}
    pos = m.end()
    while a := _ASSIGN.match(sql, pos):
        assigned[a.group(1).lower()] = literal(a.group(2))
        pos = a.end()
        if not sql.startswith(",", pos):
            break
        pos += 1
    tail = _UPDATE_TAIL.fullmatch(sql, pos) if assigned else None
    if tail is None:
        return None
    return m.group(1).lower(), assigned, (tail.group(1) or "").lower(), literal(tail.group(2)) if tail.group(2) else None


def written_table(sql: str) -> str | None:
    """The table any INSERT/REPLACE/UPDATE/DELETE/DROP/ALTER/TRUNCATE changes (lower case)."""
    m = _WRITE.match(sql)
    return m.group(1).lower() if m else None


def select(sql: str) -> tuple[str, str, str, str | None] | None:
    """``(shown columns, table, where column, where literal)`` of a simple SELECT."""
    head = _SELECT.match(sql)
    if not head or _COMPLEX.search(sql) or ((w := _WHERE.search(sql)) and _AND_OR.search(sql, w.end())):
        return None
    frm = _FROM.search(sql, head.end())
    if not frm:
        return None
    shown = sql[head.end():frm.start()].strip()
    tail = _SELECT_TAIL.fullmatch(sql, frm.end())
    if not shown or not tail:
        return None
    return shown, tail.group(1).lower(), (tail.group(2) or "").lower(), tail.group(3)


def delete(sql: str) -> tuple[str, str, str | None] | None:
    """``(table, column, value)`` of a simple ``DELETE FROM t [WHERE col = literal]``
    (column ``""``: every row)."""
    m = _DELETE.match(sql)
    if not m:
        return None
    return m.group(1).lower(), (m.group(2) or "").lower(), literal(m.group(3)) if m.group(3) else None


def inserted_rows(sql: str) -> list[tuple[str, dict[str, str | None]]]:
    """``(table, column -> value)`` of each row a simple INSERT adds (none for longer
    statements or expressions: their effect counts as unknown). Without a column list the
    columns are the positions ``#0``, ``#1``...: a query by column name cannot be checked
    against such a row, ``SELECT *`` can."""
    ins = insert(sql) if len(sql) <= MAX_SQL_CHARS else None
    if ins is None:
        return []
    table, cols, rows = ins
    out = []
    for tup in _TUPLE.finditer(rows):
        vals = values(tup.group(1))
        names = cols if cols is not None else [f"#{k}" for k in range(len(vals or []))]
        if vals is not None and len(vals) == len(names):
            out.append((table, dict(zip(names, vals, strict=True))))
    return out


# -- the loose reading ----------------------------------------------------------------
_LOOSE_INSERT = re.compile(r"insert\s+into\s+(?P<table>\w+)", re.IGNORECASE)
_LOOSE_VALUES = re.compile(r"values\s*\(", re.IGNORECASE)
# The first SELECT, then the first ``from <table>`` after it: two linear searches (one
# lazy pattern spanning both rescanned the text from every "select" in it).
_LOOSE_SELECT = re.compile(r"\bselect\b", re.IGNORECASE)
_LOOSE_FROM = re.compile(r"\bfrom\s+(?P<table>\w+)", re.IGNORECASE)
_LOOSE_LITERAL = re.compile(r"'((?:[^']|'')*)'|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])")


def _loose_inserts(text: str) -> list[tuple[str, str]]:
    """``(table, "(rows...)")`` of each ``INSERT INTO t ... VALUES (...)`` in ``text``: the
    VALUES before the statement's next ``;``, the rows up to the first ``)``. The next
    VALUES, ``;`` and ``)`` are found once and reused while they lie ahead, so the scan is
    linear however many INSERTs the text repeats."""
    out: list[tuple[str, str]] = []
    found: re.Match[str] | None = None
    semi = close = -1
    pos = 0
    while head := _LOOSE_INSERT.search(text, pos):
        start = pos = head.end()
        if found is None or found.start() < start:
            found = _LOOSE_VALUES.search(text, start)
            if found is None:
                break
        if semi < start:
            semi = text.find(";", start) % (len(text) + 1)  # none: the end
        if found.start() >= semi:
            continue
        if close < found.end():
            close = text.find(")", found.end())
            if close < 0:
                break
        out.append((head.group("table"), text[found.end() - 1:close + 1]))
        pos = close + 1
    return out


def inserted_literals(text: str) -> list[tuple[str, list[str]]]:
    """``(table, literal values)`` of each INSERT in ``text``, any form."""
    return [
        (table, [(a or b).replace("''", "'") for a, b in _LOOSE_LITERAL.findall(rows)])
        for table, rows in _loose_inserts(text)
    ]


def queried_table(text: str) -> str | None:
    """The table of the first ``SELECT ... FROM t`` in ``text`` (lower case)."""
    sel = (m := _LOOSE_SELECT.search(text)) and _LOOSE_FROM.search(text, m.end())
    return sel.group("table").lower() if sel else None
