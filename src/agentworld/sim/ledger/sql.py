"""The ledger's SQL rules: rows inserted, updated or deleted, and queries that must show them.

Statements are read by :mod:`agentworld.domains.sql` (the simple forms whose effect is
certain); a SELECT's result must show every matching row recorded.
"""

from __future__ import annotations

import re

from agentworld.domains import sql
from agentworld.sim.ledger.base import Conflict, LedgerState


def update(state: LedgerState, script: str) -> None:
    """Apply each statement of ``script``: rows inserted, changed and deleted exactly where
    the statement is simple; any other write drops the rows known for its table (all rows
    when the table is not named), so no stale row is held against a later result."""
    if len(script) > sql.MAX_SQL_CHARS:
        state.rows = [r for r in state.rows if "table" not in r]
        return
    for statement in sql.statements(script):
        _apply(state, statement)


def _apply(state: LedgerState, statement: str) -> None:
    table = sql.written_table(statement)
    if table is None:
        return  # a read (or not a statement this reading knows)
    if sql.insert(statement) is not None:
        # Rows of expressions are not read: unknown, so not recorded (nothing known changes).
        state.rows += [{"table": t, "values": row} for t, row in sql.inserted_rows(statement)]
        return
    if (deleted := sql.delete(statement)) is not None:
        _, col, val = deleted
        state.rows = [r for r in state.rows if not (r.get("table") == table and _may_match(r, col, val))]
    elif (changed := sql.update(statement)) is not None:
        _, assigned, col, val = changed
        kept = []
        for r in state.rows:
            if r.get("table") != table or (col and col in r["values"] and r["values"][col] != val):
                kept.append(r)  # another table, or a row the WHERE certainly misses
            elif all(c in r["values"] for c in [*assigned, *([col] if col else [])]):
                kept.append({**r, "values": {**r["values"], **assigned}})
            # else: the row's columns are not all known (positional, or not inserted): dropped
        state.rows = kept
    else:
        state.rows = [r for r in state.rows if r.get("table") != table]


def _may_match(row: dict, col: str, val: str | None) -> bool:
    """Whether ``WHERE col = val`` may select ``row`` (``col`` ``""``: every row)."""
    return not col or col not in row["values"] or row["values"][col] == val


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
