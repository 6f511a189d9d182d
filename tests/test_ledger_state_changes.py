"""State-changing commands in constructed sessions: after each turn the ledger holds the
new truth, or has dropped a fact it can no longer compute, and never keeps a stale one.

(The same commands on real recordings: ``test_ledger_recorded.py``.)
"""

from __future__ import annotations

from test_sim_fixtures import ks, screen

from agentworld.domains.terminal.sed import apply_sed
from agentworld.sim.ledger import LedgerState, ledger_for

W = "/workspace"


def _session(*typed: str) -> list[LedgerState]:
    """The ledger after each command (each one finished without an error)."""
    rules, state = ledger_for("terminal"), LedgerState()
    rules.update(state, "", screen("")[len("root@sandbox:/workspace# "):])
    states = []
    for cmd in typed:
        rules.update(state, ks(cmd + "\n"), screen(cmd))
        states.append(state.model_copy(deep=True))
    return states


def test_sed_in_place_replaces_the_fact_and_the_corrected_output_is_not_a_conflict() -> None:
    states = _session("echo a=1 > c.ini", "sed -i 's/a=1/a=9/' c.ini")
    assert states[0].files[f"{W}/c.ini"] == "a=1\n"
    assert states[1].files[f"{W}/c.ini"] == "a=9\n"
    rules = ledger_for("terminal")
    # The true screen agrees with the ledger; the stale one is the contradiction.
    assert rules.check(states[1], ks("cat c.ini\n"), screen("cat c.ini", "a=9")) == []
    assert [c.kind for c in rules.check(states[1], ks("cat c.ini\n"), screen("cat c.ini", "a=1"))] == ["file_content"]


def test_sed_with_a_backup_suffix_keeps_the_old_text_there() -> None:
    last = _session("printf 'x=1\\ny=2\\n' > f", "sed -i.bak -e 's/x=1/x=3/' -e 's/^y/Y/' f")[-1]
    assert last.files == {f"{W}/f": "x=3\nY=2\n", f"{W}/f.bak": "x=1\ny=2\n"}


def test_a_sed_script_not_applied_exactly_drops_the_fact() -> None:
    for script in ("1d", "s/x/y/w out", r"s/\(a*\)*/b/", "/x/s/x/y/", r"s/x\|b/c/"):
        last = _session("echo x > f", f"sed -i '{script}' f")[-1]
        assert f"{W}/f" not in last.files, script


def test_sed_reads_posix_basic_regexps() -> None:
    assert apply_sed(r"s/\(k\)=\([0-9]*\)/\2=\1 [&]/", "k=10\nj=2\n") == "10=k [k=10]\nj=2\n"
    assert apply_sed("s/return 0$/return 0;/", "return 0\nreturn 0;\n") == "return 0;\nreturn 0;\n"
    assert apply_sed(r"s/i \* i/i ** 3/", "i * i\n") == "i ** 3\n"
    assert apply_sed("s/a+b/c/", "a+b aab\n") == "c aab\n"  # `+` is a literal in a BRE
    assert apply_sed("s/a+b/c/", "a+b aab\n", ere=True) == "a+b c\n"
    assert apply_sed("s/BOB/x/Ig", "bob Bob\n") == "x x\n"
    assert apply_sed("s/a*//", "aa\n") is None  # can match empty: placement differs from GNU sed


def test_moves_copies_deletes_and_directories() -> None:
    s = _session("mkdir -p out", "echo v1 > a", "cp a b", "mv a out/", "cp -r out keep", "rm -rf out")
    assert s[2].files == {f"{W}/a": "v1\n", f"{W}/b": "v1\n"}
    assert s[3].files == {f"{W}/b": "v1\n", f"{W}/out/a": "v1\n"} and f"{W}/a" in s[3].deleted
    assert s[4].files[f"{W}/keep/a"] == "v1\n"
    assert f"{W}/out/a" not in s[5].files and f"{W}/out" in s[5].deleted and f"{W}/out" not in s[5].dirs


def test_copying_a_file_the_ledger_does_not_know_drops_the_destination() -> None:
    last = _session("echo old > dst", "cp /etc/hostname dst")[-1]
    assert f"{W}/dst" not in last.files


def test_appends_truncation_tee_and_touch() -> None:
    s = _session("echo one > log", "echo two >> log", "> log", "echo hi | tee t1 | tee -a log",
                 "touch log", "date > log", "sort t1 | tee t2")
    assert s[1].files[f"{W}/log"] == "one\ntwo\n"
    assert s[2].files[f"{W}/log"] == ""
    assert s[3].files[f"{W}/t1"] == "hi\n" and s[3].files[f"{W}/log"] == "hi\n"
    assert s[4].files[f"{W}/log"] == "hi\n"  # touch keeps the content
    assert f"{W}/log" not in s[5].files  # a program's output: unknown, not the old text
    assert f"{W}/t2" not in s[6].files


def test_commands_whose_writes_are_unknowable_drop_what_they_may_change() -> None:
    for cmd in ("git stash", "./count.sh", "python3 app.py", "vim n.txt", "rm *.txt",
                "for f in *.txt; do mv \"$f\" \"$f.bak\"; done", "tar xzf a.tgz", "sed -f edit.sed -i n.txt"):
        last = _session("echo keep > n.txt", "rm gone.txt", cmd)[-1]
        assert f"{W}/n.txt" not in last.files, cmd
    # What a command cannot touch stays known.
    last = _session("echo keep > n.txt", "ls -l; grep keep n.txt; sed 's/k/K/' n.txt")[-1]
    assert last.files == {f"{W}/n.txt": "keep\n"}


def test_gzip_and_gunzip_replace_the_file() -> None:
    s = _session("echo d > data.txt", "gzip data.txt", "gunzip data.txt.gz")
    assert f"{W}/data.txt" in s[1].deleted and f"{W}/data.txt" not in s[1].files
    assert f"{W}/data.txt" not in s[2].deleted  # back, content not read
    rules = ledger_for("terminal")
    assert rules.check(s[2], ks("cat data.txt\n"), screen("cat data.txt", "d")) == []


def test_pwd_is_checked_against_its_output_not_the_prompt() -> None:
    state = LedgerState(cwd="/srv")
    rules = ledger_for("terminal")
    right = "root@sandbox:/srv# pwd\n/srv\nroot@sandbox:/srv#"
    wrong = "root@sandbox:/srv# pwd\n/workspace\nroot@sandbox:/srv#"
    assert rules.check(state, ks("pwd\n"), right) == []
    found = rules.check(state, ks("pwd\n"), wrong)
    assert [(c.kind, c.key, c.expected) for c in found] == [("cwd", "pwd", "/srv")]
