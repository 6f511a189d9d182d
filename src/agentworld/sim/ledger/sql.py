"""SQL statements inside tool calls: rows inserted or deleted, and queries that must show them.

Only the simple forms whose effect is certain are read: ``INSERT INTO t (cols) VALUES
(...), (...)`` with literal values, ``DELETE FROM t WHERE col = literal`` and
``SELECT ... FROM t`` with no WHERE clause or a single ``col = literal`` condition (and
no joins, limits or aggregates), whose result must show every matching row recorded.
"""

from __future__ import annotations

import re
from typing import Any

from agentworld.sim.ledger.base import Conflict, LedgerState

# Agent input: every pattern here runs in linear time. A quoted literal may not be
# followed by a quote (``''`` inside it is the escape), so it has exactly one parse and
# repetitions of literals cannot backtrack exponentially; trailing ``;`` and blanks are
# matched as ``\s*(?:;\s*)?$``, never as two adjacent ``\s*``.
_STR = r"'(?:[^']|'')*'(?!')"
_LIT = rf"{_STR}|-?\d+(?:\.\d+)?"
_INSERT = re.compile(r"^\s*insert\s+into\s+[`\"]?(\w+)[`\"]?\s*\(([^)]*)\)\s*values\s*", re.I)
_DELETE = re.compile(rf"^\s*delete\s+from\s+[`\"]?(\w+)[`\"]?\s+where\s+(\w+)\s*=\s*({_LIT})\s*(?:;\s*)?$", re.I | re.S)
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

def _literal(text: str) -> str | None:
    text = text.strip()
    if text.lower() == "null":
        return None
    return text[1:-1].replace("''", "'") if text.startswith("'") else text


def _values(body: str) -> list[str | None] | None:
    out, pos = [], 0
    while pos < len(body):
        m = _LITERAL.match(body, pos)
        if not m:
            return None  # an expression, not a literal: effect unknown
        out.append(_literal(m.group(1)))
        pos = m.end()
    return out


def sql_of(args: dict[str, Any]) -> str | None:
    """The SQL statement among a tool call's string arguments, if any."""
    for v in args.values():
        if isinstance(v, str) and re.match(r"\s*(insert|delete|select|update)\b", v, re.I):
            return v
    return None


def _insert(sql: str) -> tuple[str, list[str], str] | None:
    """``(table, columns, rows text)`` of a simple INSERT."""
    m = _INSERT.match(sql)
    if not m:
        return None
    rest = sql[m.end():].rstrip()
    rest = rest[:-1] if rest.endswith(";") else rest
    return (m.group(1).lower(), [c.strip(' `"').lower() for c in m.group(2).split(",")], rest) if rest else None


def _select(sql: str) -> tuple[str, str, str, str | None] | None:
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


def update(state: LedgerState, sql: str) -> None:
    if len(sql) > MAX_SQL_CHARS:
        return
    if ins := _insert(sql):
        table, cols, rows = ins
        for tup in _TUPLE.finditer(rows):
            vals = _values(tup.group(1))
            if vals is not None and len(vals) == len(cols):
                state.rows.append({"table": table, "values": dict(zip(cols, vals))})
    elif m := _DELETE.match(sql):
        table, col, val = m.group(1).lower(), m.group(2).lower(), _literal(m.group(3))
        state.rows = [r for r in state.rows if not (r.get("table") == table and r["values"].get(col) == val)]


def check(state: LedgerState, sql: str, result: str) -> list[Conflict]:
    sel = _select(sql) if len(sql) <= MAX_SQL_CHARS else None
    if sel is None:
        return []
    shown, table, col, literal = sel
    val = _literal(literal) if literal else None
    columns = None if shown == "*" else [c.strip(' `"').lower() for c in shown.split(",")]
    if columns is not None and not all(re.fullmatch(r"\w+", c) for c in columns):
        return []  # expressions or aliases: the result's form is not determined
    found = []
    for row in state.rows:
        if row.get("table") != table or (col and row["values"].get(col) != val):
            continue
        values = row["values"] if columns is None else {c: row["values"].get(c) for c in columns}
        missing = [v for v in values.values() if v is not None and str(v) not in result]
        if missing:
            found.append(Conflict(kind="db_row", key=table, expected=str(row["values"]), detail=f"inserted row not in the result ({missing[0]!r} absent)"))
    return found
