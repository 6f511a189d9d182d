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

_INSERT = re.compile(r"^\s*insert\s+into\s+[`\"]?(\w+)[`\"]?\s*\(([^)]*)\)\s*values\s*(.+?);?\s*$", re.I | re.S)
_DELETE = re.compile(r"^\s*delete\s+from\s+[`\"]?(\w+)[`\"]?\s+where\s+(\w+)\s*=\s*('(?:[^']|'')*'|-?\d+(?:\.\d+)?)\s*;?\s*$", re.I | re.S)
_SELECT = re.compile(r"^\s*select\s+(.+?)\s+from\s+[`\"]?(\w+)[`\"]?(?:\s+where\s+(\w+)\s*=\s*('(?:[^']|'')*'|-?\d+(?:\.\d+)?))?\s*;?\s*$", re.I | re.S)
_NOT_SIMPLE = re.compile(r"\b(join|limit|group\s+by|count|sum|avg|min|max|distinct|offset)\b|\bwhere\b.*\b(and|or)\b", re.I | re.S)
_TUPLE = re.compile(r"\(((?:'(?:[^']|'')*'|[^()'])*)\)")
_LITERAL = re.compile(r"\s*('(?:[^']|'')*'|-?\d+(?:\.\d+)?|null)\s*(?:,|$)", re.I)


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


def update(state: LedgerState, sql: str) -> None:
    if m := _INSERT.match(sql):
        table, cols = m.group(1).lower(), [c.strip(' `"').lower() for c in m.group(2).split(",")]
        for tup in _TUPLE.finditer(m.group(3)):
            vals = _values(tup.group(1))
            if vals is not None and len(vals) == len(cols):
                state.rows.append({"table": table, "values": dict(zip(cols, vals))})
    elif m := _DELETE.match(sql):
        table, col, val = m.group(1).lower(), m.group(2).lower(), _literal(m.group(3))
        state.rows = [r for r in state.rows if not (r.get("table") == table and r["values"].get(col) == val)]


def check(state: LedgerState, sql: str, result: str) -> list[Conflict]:
    m = _SELECT.match(sql)
    if not m or _NOT_SIMPLE.search(sql):
        return []
    shown, table, col = m.group(1).strip(), m.group(2).lower(), (m.group(3) or "").lower()
    val = _literal(m.group(4)) if m.group(4) else None
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
