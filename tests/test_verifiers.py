"""Rule verifiers: derivation from recorded turns, binary verdicts, the RL rule reward."""

from __future__ import annotations

import json

from agentworld.judge.verifiers import RULE_REWARD_MAX, VerifierSpec, derive_specs, rule_reward, verify
from agentworld.prompts import format_observation
from agentworld.records.trajectory import Trajectory, Turn

P = "root@sandbox:/workspace# "


def keys(cmd: str) -> str:
    return json.dumps([{"keystrokes": cmd + "\n", "duration": 1.0}])


def term(turns: list[tuple[str, str]], **kw) -> Trajectory:
    return Trajectory(
        id="t", domain="terminal", turns=[Turn(action=keys(a), observation=f"{P}{a}\n{o}{P}") for a, o in turns], **kw
    )


def kinds(traj: Trajectory, k: int) -> dict[str, list[str]]:
    return {s.kind: s.must_contain for s in derive_specs(traj, k)}


def test_write_then_read_via_shell_redirection_and_heredoc() -> None:
    t = term(
        [
            ("echo 'alpha beta' > notes.txt", ""),
            ("cat > conf.ini <<EOF\n[main]\nport = 8080\nEOF", ""),
            ("cat notes.txt", "alpha beta\n"),
            ("cat conf.ini", "[main]\nport = 8080\n"),
        ]
    )
    assert kinds(t, 3)["write_read"] == ["alpha beta"]
    assert kinds(t, 4)["write_read"] == ["[main]", "port = 8080"]
    assert "write_read" not in kinds(t, 1)


def test_write_then_read_via_tool_calls() -> None:
    write = json.dumps({"name": "write_file", "arguments": {"path": "/w/a.py", "content": "x = 1\nprint(x)\n"}})
    read = json.dumps({"name": "read_file", "arguments": {"path": "/w/a.py"}})
    t = Trajectory(
        id="s", domain="swe", turns=[Turn(action=write, observation="ok"), Turn(action=read, observation="x = 1\nprint(x)")]
    )
    assert kinds(t, 2)["write_read"] == ["x = 1", "print(x)"]


def test_env_var_then_command() -> None:
    t = term([("export API_URL=http://db.local:5432", ""), ("echo $API_URL", "http://db.local:5432\n")])
    assert kinds(t, 2)["env_command"] == ["http://db.local:5432"]
    t2 = term([("export API_URL=http://db.local:5432", ""), ("echo $HOME", "/root\n")])
    assert "env_command" not in kinds(t2, 2)


def test_db_write_then_query() -> None:
    ins = "sqlite3 app.db \"INSERT INTO users VALUES (7, 'Grace Hopper', 'navy');\""
    sel = "sqlite3 app.db 'SELECT * FROM users;'"
    t = term([(ins, ""), (sel, "7|Grace Hopper|navy\n")])
    assert kinds(t, 2)["db_query"] == ["7", "Grace Hopper", "navy"]
    other = term([(ins, ""), ("sqlite3 app.db 'SELECT * FROM orders;'", "\n")])
    assert "db_query" not in kinds(other, 2)


def test_error_and_controllability() -> None:
    t = term(
        [("pip install numpy", "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n")],
        simulation_instruction="pip install fails with 'Errno 28' (No space left on device)",
    )
    k = kinds(t, 1)
    assert k["controllability"] == ["Errno 28", "No space left on device"]
    assert "error" in k
    # a mark the real observation does not show is never required
    t.simulation_instruction = "network calls fail with 'Connection reset by peer'"
    assert "controllability" not in kinds(t, 1)


def test_every_spec_passes_on_the_ground_truth() -> None:
    t = term([("echo 'hi there' > a.txt", ""), ("export N=5", ""), ("cat a.txt; echo $N", "hi there\n5\n"), ("ls nope", "ls: cannot access 'nope': No such file or directory\n")])
    for k in range(1, 5):
        for spec in derive_specs(t, k):
            assert verify(spec, t.turns[k - 1].observation), spec


def test_verify_and_rule_reward_are_binary() -> None:
    spec = VerifierSpec(kind="write_read", must_contain=["alpha  beta", "gamma"], must_not_contain=["Traceback"])
    assert verify(spec, "x\nalpha beta\ngamma")
    assert not verify(spec, "alpha beta")
    assert not verify(spec, "alpha beta gamma Traceback")
    good = format_observation("alpha beta\ngamma", reasoning="the file was written earlier")
    assert rule_reward([spec], good) == RULE_REWARD_MAX
    assert rule_reward([spec], format_observation("alpha beta")) == 0.0
    # the answer must be in a closed observation block: truncation earns nothing
    assert rule_reward([spec], "<predicted_observation>\nalpha beta\ngamma") == 0.0
    # text inside reasoning never counts
    assert rule_reward([spec], "<think>alpha beta gamma</think><predicted_observation>no</predicted_observation>") == 0.0
    # no spec: nothing checked, no free credit; with the sample the rule scorer's share
    assert rule_reward([], format_observation("anything")) == 0.0


def test_error_signatures_and_tool_errors() -> None:
    t = term([("python3 -c 'open(\"x\")'", "Traceback (most recent call last):\n  File \"<string>\", line 1\nFileNotFoundError: [Errno 2] No such file or directory: 'x'\n")])
    assert kinds(t, 1)["error"] == ["FileNotFoundError", "[Errno 2]", "No such file or directory"]
    assert "error" not in kinds(term([("echo ok", "ok\n")]), 1)
    fail = json.dumps({"content": [{"type": "text", "text": "Entity not found"}], "isError": True})
    ok = json.dumps({"content": [{"type": "text", "text": "[]"}], "isError": False})
    mcp = Trajectory(id="m", domain="mcp", turns=[Turn(action='{"name": "open_nodes", "arguments": {}}', observation=fail)])
    [spec] = derive_specs(mcp, 1)
    assert spec.kind == "error" and spec.json_fields == {"isError": True}
    compact = json.dumps({"isError": True, "content": [{"type": "text", "text": "boom"}]}, separators=(",", ":"))
    assert verify(spec, compact)
    assert not verify(spec, ok)
    assert not verify(spec, "isError: true")  # not a JSON object


def test_derivation_stays_linear_on_huge_repetitive_actions():
    # One lazy pattern per keyword rescanned the text from every occurrence (quadratic);
    # now each of these derives in milliseconds (a regression hits the test timeout).
    big = 1 << 20
    for action in ("select " * (big // 7), "insert into t " * (big // 14), "insert into t values ( " * (big // 24)):
        traj = Trajectory(id="t", domain="terminal", turns=[Turn(action=action, observation="ok"),
                                                             Turn(action="select a from t", observation="1")])
        derive_specs(traj, 1)
    # A ';' inside a quoted value does not end the statement.
    rows = term([("sqlite3 db \"insert into t (a, b) values ('x;y', 42);\"", ""), ("sqlite3 db 'select * from t'", "x;y|42\n")])
    assert kinds(rows, 2)["db_query"] == ["x;y", "42"]
