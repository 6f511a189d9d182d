"""SQL through a database tool: the ledger's rows follow a real SQLite database after every
statement (inserts with and without a column list, updates, deletes), the true query
results raise no conflict, and the rows reach the prompt."""

from __future__ import annotations

import json
import sqlite3

from test_sim_fixtures import call, result

from agentworld.sim.ledger import LedgerState, ledger_for

SCRIPT = [
    "INSERT INTO users (id, name, city) VALUES (1, 'ana', 'Oslo'), (2, 'bo', 'Lima')",
    "INSERT INTO users VALUES (3, 'cy', 'Rome')",
    "UPDATE users SET city = 'Quito' WHERE id = 1",
    "SELECT * FROM users",
    "SELECT name, city FROM users WHERE id = 1",
    "DELETE FROM users WHERE name = 'bo'",
    "UPDATE users SET city = 'Pisa'",
    "SELECT * FROM users",
    "INSERT INTO users (id, name, city) VALUES (4, 'di', 'Kiev'); UPDATE users SET name = 'dee' WHERE id = 4",
    "SELECT * FROM users",
    "UPDATE users SET city = upper(city) WHERE id = 4",
    "SELECT * FROM users",
    "DELETE FROM users",
    "SELECT * FROM users",
]


def _as_text(rows: list[tuple]) -> str:
    return "\n".join("|".join(str(v) for v in row) for row in rows)


def test_rows_follow_a_real_database_and_true_results_raise_no_conflict() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE users (id INTEGER, name TEXT, city TEXT)")
    rules, state = ledger_for("mcp"), LedgerState()
    for statement in SCRIPT:
        cursor = db.executescript(statement) if ";" in statement else db.execute(statement)
        real = _as_text(cursor.fetchall())
        action, observation = call("query", sql=statement), result(real)
        assert rules.check(state, action, observation) == [], statement
        rules.update(state, action, observation)
        truth = {r[0]: dict(zip(("id", "name", "city"), map(str, r), strict=True))
                 for r in db.execute("SELECT * FROM users")}
        for row in state.rows:
            values = row["values"]
            named = {k: values[f"#{i}"] for i, k in enumerate(("id", "name", "city"))} if "#0" in values else values
            assert truth.get(int(named["id"])) == {**truth.get(int(named["id"]), {}), **named}, (statement, row)
    assert state.rows == []


def test_a_stale_row_is_a_conflict_and_an_unknown_update_drops_the_rows() -> None:
    rules, state = ledger_for("mcp"), LedgerState()
    for statement in ("INSERT INTO t (k, v) VALUES ('a', 'old')", "UPDATE t SET v = 'new' WHERE k = 'a'"):
        rules.update(state, call("query", sql=statement), result("ok"))
    assert state.rows == [{"table": "t", "values": {"k": "a", "v": "new"}}]
    stale = rules.check(state, call("query", sql="SELECT * FROM t"), result("a|old"))
    assert [c.kind for c in stale] == ["db_row"]
    rules.update(state, call("query", sql="UPDATE t SET v = v || '!'"), result("ok"))
    assert state.rows == []


def test_rows_reach_the_prompt() -> None:
    rules, state = ledger_for("mcp"), LedgerState()
    rules.update(state, call("query", sql="INSERT INTO t (k, v) VALUES ('a', 1)"), result("ok"))
    rules.update(state, call("query", sql="INSERT INTO t VALUES ('b', NULL)"), result("ok"))
    text = state.render()
    assert 'table t holds the row {"k": "a", "v": "1"}' in text
    assert 'table t holds the row ("b", NULL)' in text
    assert json.loads(text.split("holds the row ", 1)[1].split("\n")[0]) == {"k": "a", "v": "1"}
