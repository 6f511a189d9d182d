"""The ledger's SQL rules: rows inserted or deleted, and queries that must show them.

Statements are read by :mod:`agentworld.domains.sql` (the simple forms whose effect is
certain); a SELECT's result must show every matching row recorded.
"""

from __future__ import annotations

import re

from agentworld.domains import sql
from agentworld.sim.ledger.base import Conflict, LedgerState


def update(state: LedgerState, statement: str) -> None:
    if len(statement) > sql.MAX_SQL_CHARS:
        return
    if sql.insert(statement):
        state.rows += [{"table": table, "values": row} for table, row in sql.inserted_rows(statement)]
    elif deleted := sql.delete(statement):
        table, col, val = deleted
        state.rows = [r for r in state.rows if not (r.get("table") == table and r["values"].get(col) == val)]


def check(state: LedgerState, statement: str, result: str) -> list[Conflict]:
    sel = sql.select(statement) if len(statement) <= sql.MAX_SQL_CHARS else None
    if sel is None:
        return []
    shown, table, col, literal = sel
    val = sql.literal(literal) if literal else None
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
