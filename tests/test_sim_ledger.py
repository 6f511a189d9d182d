"""Ledger rules: what actions establish, and which predictions contradict it."""

from __future__ import annotations

import pytest
from test_sim_fixtures import call, ks, result, screen

from agentworld.sim.ledger import LedgerState, ledger_for


def _terminal(*turns: tuple[str, str]) -> tuple[LedgerState, object]:
    state, rules = LedgerState(), ledger_for("terminal")
    rules.update(state, "", "root@sandbox:/workspace# ")
    for cmd, obs in turns:
        rules.update(state, ks(cmd), obs)
    return state, rules


def test_terminal_rules_record_writes_heredocs_moves_deletes_cwd_and_env():
    state, _ = _terminal(
        ("echo hello > a.txt\n", screen("echo hello > a.txt")),
        ("cat > b.txt << 'EOF'\nline one\nline two\nEOF\n", screen("cat > b.txt")),
        ("echo more >> a.txt && mv b.txt c.txt\n", screen("echo more >> a.txt && mv b.txt c.txt")),
        ("export TOKEN=s3cret; rm -f old.log\n", screen("export TOKEN=s3cret; rm -f old.log")),
        ("mkdir -p sub && cd sub\n", screen("mkdir -p sub && cd sub", cwd="/workspace/sub")),
    )
    assert state.files == {"/workspace/a.txt": "hello\nmore\n", "/workspace/c.txt": "line one\nline two\n"}
    assert "/workspace/b.txt" in state.deleted and "/workspace/old.log" in state.deleted
    assert state.env == {"TOKEN": "s3cret"}
    assert state.cwd == "/workspace/sub" and "/workspace/sub" in state.dirs
    assert "file /workspace/a.txt contains" in state.render()


def test_failed_write_is_not_recorded():
    state, _ = _terminal(("echo x > /etc/passwd\n", screen("echo x > /etc/passwd", "bash: /etc/passwd: Permission denied")))
    assert state.files == {}


def test_terminal_checks_flag_contradictions_and_accept_consistent_output():
    state, rules = _terminal(
        ("echo hello > a.txt\n", screen("echo hello > a.txt")),
        ("rm gone.txt\n", screen("rm gone.txt")),
        ("export NAME=ada\n", screen("export NAME=ada")),
    )
    kinds = lambda cmd, obs: [c.kind for c in rules.check(state, ks(cmd), obs)]  # noqa: E731
    assert kinds("cat a.txt\n", screen("cat a.txt", "hello")) == []
    assert kinds("cat a.txt\n", screen("cat a.txt", "goodbye")) == ["file_content"]
    assert kinds("cat a.txt\n", screen("cat a.txt", "cat: a.txt: No such file or directory")) == ["missing_file"]
    assert kinds("cat gone.txt\n", screen("cat gone.txt", "still here")) == ["deleted_path"]
    assert kinds("cat gone.txt\n", screen("cat gone.txt", "cat: gone.txt: No such file or directory")) == []
    assert kinds("echo $NAME\n", screen("echo $NAME", "bob")) == ["env_var"]
    assert kinds("echo $NAME\n", screen("echo $NAME", "ada")) == []
    assert kinds("ls\n", screen("ls", "b.txt")) == ["missing_file"]
    assert kinds("ls\n", screen("ls", "a.txt  gone.txt")) == ["deleted_path"]
    assert kinds("true\n", screen("true", cwd="/tmp")) == ["cwd"]


def test_tool_rules_files_ids_and_memory():
    state, rules = LedgerState(), ledger_for("mcp")
    rules.update(state, call("write_file", path="/d/a.txt", content="alpha\nbeta"), result("ok"))
    rules.update(state, call("create_issue", title="bug"), result('{"id": 42, "title": "bug"}'))
    rules.update(state, call("delete_issue", id=7), result("deleted"))
    rules.update(state, call("store_memory", key="k", value="v1"), result("stored"))
    assert state.files == {"/d/a.txt": "alpha\nbeta"} and state.ids == {"42": "create_issue"}
    assert state.deleted_ids == ["7"] and state.memory == {"k": "v1"}
    check = lambda a, o: [c.kind for c in rules.check(state, a, o)]  # noqa: E731
    assert check(call("read_file", path="/d/a.txt"), result("alpha\nbeta")) == []
    assert check(call("read_file", path="/d/a.txt"), result("gamma")) == ["file_content"]
    assert check(call("read_file", path="/d/a.txt"), result("ENOENT: no such file", True)) == ["missing_file"]
    assert check(call("get_issue", id=7), result('{"id": 7, "title": "old"}')) == ["deleted_id"]
    assert check(call("get_issue", id=42), result("Issue 42 not found", True)) == ["missing_id"]
    assert check(call("recall_memory", key="k"), result("v2")) == ["memory"]


def test_error_results_change_nothing():
    state, rules = LedgerState(), ledger_for("mcp")
    rules.update(state, call("write_file", path="/d/a.txt", content="x"), result("Error: disk full", True))
    assert state.files == {}


def test_search_rules_memory_and_repeated_extraction():
    state, rules = LedgerState(), ledger_for("search")
    rules.update(state, call("dict_memory", op="add", key="capital", value="Velmora"), "stored capital")
    page = "Velmora is a city in Tarnia. It was founded in 1204 and has a harbour."
    rules.update(state, call("web_extractor", url="https://x.fict/Velmora"), page)
    assert rules.check(state, call("dict_memory", op="get", key="capital"), "Velmora") == []
    assert [c.kind for c in rules.check(state, call("dict_memory", op="get", key="capital"), "Osk")] == ["memory"]
    assert rules.check(state, call("web_extractor", url="https://x.fict/Velmora"), page) == []
    other = "Completely different text about ships and weather patterns in the north."
    assert [c.kind for c in rules.check(state, call("web_extractor", url="https://x.fict/Velmora"), other)] == ["page"]


def test_gui_domains_without_rules_record_nothing():
    state, rules = LedgerState(), ledger_for("android")
    rules.update(state, "click(12)", "[12] button 'OK'")
    assert state.is_empty() and rules.check(state, "click(12)", "anything") == []


def test_swe_shell_and_editor_tools():
    state, rules = LedgerState(), ledger_for("swe")
    bash = lambda cmd: call("bash", command=cmd)  # noqa: E731
    rules.update(state, bash("cd /repo && echo 'x = 1' > cfg.py"), "[Current working directory: /repo]\n[Command finished with exit code 0]")
    rules.update(state, call("str_replace_editor", command="create", path="/repo/a.py", file_text="def f():\n    return 1\n"), "File created successfully at: /repo/a.py")
    rules.update(state, call("str_replace_editor", command="str_replace", path="/repo/a.py", old_str="return 1", new_str="return 2"), "The file /repo/a.py has been edited.")
    assert state.files == {"/repo/cfg.py": "x = 1\n", "/repo/a.py": "def f():\n    return 2\n"}
    view = call("str_replace_editor", command="view", path="/repo/a.py")
    assert rules.check(state, view, "     1\tdef f():\n     2\t    return 2\n") == []
    assert [c.kind for c in rules.check(state, view, "     1\tdef f():\n     2\t    return 1\n")] == ["file_content"]
    assert [c.kind for c in rules.check(state, bash("cat cfg.py"), "x = 2\n[Command finished with exit code 0]")] == ["file_content"]


def test_sql_rows_written_must_be_read_back():
    state, rules = LedgerState(), ledger_for("mcp")
    q = lambda sql: call("write_query", query=sql)  # noqa: E731
    rules.update(state, q("INSERT INTO users (id, name) VALUES (1, 'Ada'), (2, 'O''Brien')"), result("2 rows affected"))
    rules.update(state, q("INSERT INTO users (id, name) VALUES (3, 'Cy')"), result("1 row affected"))
    rules.update(state, q("DELETE FROM users WHERE id = 3"), result("1 row affected"))
    assert [r["values"]["name"] for r in state.rows] == ["Ada", "O'Brien"]
    read = call("read_query", query="SELECT * FROM users")
    assert rules.check(state, read, result('[{"id": 1, "name": "Ada"}, {"id": 2, "name": "O\'Brien"}]')) == []
    assert [c.kind for c in rules.check(state, read, result('[{"id": 1, "name": "Ada"}]'))] == ["db_row"]
    one = call("read_query", query="SELECT name FROM users WHERE id = 2")
    assert rules.check(state, one, result("O'Brien")) == [] and rules.check(state, one, result("Ada")) != []
    # Forms whose result is not determined by the ledger are not judged.
    assert rules.check(state, call("read_query", query="SELECT COUNT(*) FROM users"), result("7")) == []
    assert rules.check(state, call("read_query", query="SELECT * FROM users LIMIT 1"), result("[]")) == []


def test_shell_words_match_shlex_where_both_follow_posix():
    import random
    import shlex

    from agentworld.domains.terminal.shell import split_words

    rng = random.Random(0)
    for _ in range(5000):  # '#' inside a word and '\$' in double quotes follow bash instead
        line = "".join(rng.choice("ab \"\\'") for _ in range(rng.randint(0, 14)))
        try:
            expected = shlex.split(line, comments=True)
        except ValueError:
            expected = None
        assert split_words(line) == expected, line
    assert split_words("echo 'a b' \"c\\\"d\" e\\ f # note") == ["echo", "a b", 'c"d', "e f"]


@pytest.mark.timeout(120)
def test_megabyte_actions_parse_in_bounded_time():
    """Inputs that made the old parsers quadratic or exponential (shlex on one long word,
    SQL patterns with nested quantifiers): each now takes well under a second; a
    regression shows up as this test running into its timeout."""
    big = 1 << 20
    actions = {
        "terminal": [ks("a" * big), ks('"' * big), ks("a\n" * (big // 2)), ks("cat > f <<EOF\n" + "line\n" * (big // 5)),
                     ks("echo " + '"a b" ' * (big // 6))],
        "mcp": [call("run_sql", query="insert into t (a) values (1" + " " * big + "x"),
                call("run_sql", query="insert into t (a) values (" + "''" * (big // 2)),
                call("run_sql", query="delete from t where a = 1" + " " * big + "x"),
                call("run_sql", query="select a from t where " + "where " * (big // 6)),
                call("bash", command="echo " + '"a b" ' * (big // 6))],
    }
    for domain, acts in actions.items():
        rules = ledger_for(domain)
        for action in acts:
            state = LedgerState()
            rules.update(state, action, "ok\nroot@sandbox:/workspace# ")
            rules.check(state, action, "ok")
    # The typed text past the parse bound is not read: a heredoc cut there writes nothing.
    state, _ = _terminal(("cat > f.txt <<EOF\n" + "x\n" * (1 << 16) + "EOF\n", screen("cat > f.txt")))
    assert "/workspace/f.txt" not in state.files
