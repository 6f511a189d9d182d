"""One extractor per domain says what an action did; the ledger and the verifiers both read it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from agentworld.domains import action_effects, search, terminal, toolcall
from agentworld.domains.effects import Effect
from agentworld.domains.terminal.screen import final_prompt_line, last_prompt, prompt_dirs, strip_final_prompt
from agentworld.judge.verifiers import derive_specs
from agentworld.records.trajectory import Trajectory, Turn
from agentworld.sim.ledger import LedgerState, ledger_for
from agentworld.sim.perturb import action_target

SRC = Path(__file__).resolve().parents[1] / "src" / "agentworld"
P = "root@sandbox:/workspace# "


def keys(*typed: str) -> str:
    return json.dumps([{"keystrokes": t, "duration": 0.5} for t in typed])


def call(name: str, **args: object) -> str:
    return json.dumps({"name": name, "arguments": args})


def both_sides(domain: str, turns: list[tuple[str, str]]) -> tuple[LedgerState, dict[str, list[str]]]:
    """The ledger after every turn but the last, and the specs the verifiers derive for the last."""
    state, ledger = LedgerState(cwd="/workspace"), ledger_for(domain)
    for action, obs in turns[:-1]:
        ledger.update(state, action, obs)
    traj = Trajectory(id="t", domain=domain, turns=[Turn(action=a, observation=o) for a, o in turns])
    return state, {s.kind: s.must_contain for s in derive_specs(traj, len(turns))}


def test_terminal_effects_in_order_with_variables_expanded_as_they_are_set() -> None:
    action = keys("cd /srv && export NAME=web; echo \"$NAME; ready\" > s.txt\n", "C-c",
                  "cp s.txt t.txt; rm -f old; mkdir -p logs; grep -n ready s.txt\n")
    ops = terminal.effects(action).ops
    assert ops == [
        Effect("cd", "/srv"), Effect("setenv", "NAME", "web"), Effect("write", "s.txt", "web; ready\n"),
        Effect("copy", "t.txt", source="s.txt"), Effect("delete", "old"), Effect("mkdir", "logs"),
        Effect("read", "s.txt"),
    ]
    assert terminal.effects(action).written() == {"s.txt": "web; ready\n"}
    # The screen says a command failed: which one is unknowable, so nothing is reported.
    failed = terminal.effects(action, f"{P}cd /srv\nbash: cd: /srv: No such file or directory\n{P}")
    assert failed.failed and failed.ops == []


def test_the_ledger_and_the_verifiers_agree_on_a_write_read_back() -> None:
    # A ';' inside quotes and an unquoted echo: both sides read them through one extractor.
    turns = [
        (keys('echo "port=8080; debug=1" > app.conf\n'), f"{P}echo ...\n{P}"),
        (keys("echo hello world >> app.conf\n"), f"{P}echo ...\n{P}"),
        (keys("cat app.conf\n"), f"{P}cat app.conf\nport=8080; debug=1\nhello world\n{P}"),
    ]
    state, specs = both_sides("terminal", turns)
    assert state.files == {"/workspace/app.conf": "port=8080; debug=1\nhello world\n"}
    assert specs["write_read"] == ["port=8080; debug=1", "hello world"]


def test_the_ledger_and_the_verifiers_agree_on_variables() -> None:
    turns = [(keys("export API=http://db.local:5432\n"), f"{P}export ...\n{P}"),
             (keys("echo $API\n"), f"{P}echo $API\nhttp://db.local:5432\n{P}")]
    state, specs = both_sides("terminal", turns)
    assert state.env == {"API": "http://db.local:5432"}
    assert specs["env_command"] == ["http://db.local:5432"]


def test_tool_call_effects_serve_both_sides() -> None:
    ok = json.dumps({"content": [{"type": "text", "text": "ok"}], "isError": False})
    turns = [
        (call("write_file", path="/w/a.py", content="x = 1\nprint(x)\n"), ok),
        (call("read_file", path="/w/a.py"), "x = 1\nprint(x)"),
    ]
    state, specs = both_sides("swe", turns)
    assert state.files == {"/w/a.py": "x = 1\nprint(x)\n"}
    assert specs["write_read"] == ["x = 1", "print(x)"]
    # SQL through a database tool: rows recorded by the ledger, queried back by a verifier.
    insert = call("write_query", query="INSERT INTO users (id, name) VALUES (7, 'Grace Hopper')")
    select = call("read_query", query="SELECT * FROM users")
    state, specs = both_sides("mcp", [(insert, ok), (select, '[{"id": 7, "name": "Grace Hopper"}]')])
    assert state.rows == [{"table": "users", "values": {"id": "7", "name": "Grace Hopper"}}]
    assert specs["db_query"] == ["7", "Grace Hopper"]


def test_tool_call_effects_read_shell_tools_editors_and_failures() -> None:
    assert toolcall.effects(call("bash", command="echo hi > /tmp/x")).written() == {"/tmp/x": "hi\n"}
    create = call("str_replace_editor", command="create", path="/r/m.py", file_text="a\n")
    assert toolcall.effects(create).written() == {"/r/m.py": "a\n"}
    edit = toolcall.effects(call("str_replace_editor", command="str_replace", path="/r/m.py", old_str="a", new_str="b"))
    assert edit.of("edit") == [Effect("edit", "/r/m.py", "b", source="a")]
    failed = json.dumps({"content": [{"type": "text", "text": "denied"}], "isError": True})
    assert toolcall.effects(create, failed).failed
    created = json.dumps({"content": [{"type": "text", "text": '{"id": "n1"}'}], "isError": False})
    assert [op.target for op in toolcall.effects(call("create_note", title="t"), created).of("created")] == ["n1"]


def test_search_effects_and_dispatch_by_domain() -> None:
    add = call("dict_memory", op="add", key="k", value="v1")
    assert search.effects(add).ops == [Effect("remember", "k", "v1")]
    assert action_effects("x/search", add) == search.effects(add)
    state = LedgerState()
    ledger_for("search").update(state, add, "stored")
    assert state.memory == {"k": "v1"}
    assert action_effects("web", 'click("b1")').ops == []  # GUI domains: nothing yet


def test_typed_text_is_one_reading_of_keystrokes() -> None:
    action = keys("2G", "cc", "port=6835", "Escape")
    assert terminal.typed_text(action) == "2Gccport=6835"  # key presses type nothing
    assert action_target(action) == "2Gccport=6835"
    assert terminal.typed_text("ls -la\n") == "ls -la\n"  # not a keystroke list: typed as is
    raw_newline = '[{"keystrokes": "ls\n", "duration": 1}]'  # a raw newline inside the JSON string
    assert terminal.typed_text(raw_newline) == "ls\n"


def test_one_prompt_pattern_reads_every_screen() -> None:
    screen = "root@sandbox:/workspace# cd /tmp\nroot@sandbox:/tmp# \n"
    assert prompt_dirs(screen) == ["/tmp"]
    assert last_prompt(screen) == "root@sandbox:/tmp#"
    assert last_prompt("dev@box:~/proj$ make\nbuilding\n") == "dev@box:~/proj$"
    assert last_prompt("me@mac:~ % ls") is None and last_prompt("me@mac:~% ls") == "me@mac:~%"
    assert final_prompt_line("out\nroot@h:/w#") == "root@h:/w#"
    assert strip_final_prompt("out\nroot@h:/w# ") == "out"
    assert final_prompt_line("root@h:/w# sleep 9") == ""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def _layer_imports(layer: str) -> dict[str, set[str]]:
    return {str(p.relative_to(SRC)): _imports(p) for p in (SRC / layer).rglob("*.py")}


def test_domain_knowledge_comes_from_domains_only() -> None:
    def offenders(layer: str, banned: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
        return [f"{f}: {m}" for f, mods in _layer_imports(layer).items() if f not in allowed
                for m in mods if m.startswith(banned)]

    assert offenders("judge", ("agentworld.data", "agentworld.sim")) == []
    # The drift monitor scores with the rule scorer; that is judging, not domain knowledge.
    assert offenders("sim", ("agentworld.judge",), allowed=("sim/drift.py",)) == []
    assert offenders("domains", tuple(f"agentworld.{m}" for m in ("judge", "sim", "data", "envs", "bench", "models", "train"))) == []


def test_domains_is_light_to_import() -> None:
    code = "import sys, agentworld.domains; print(sorted(m for m in ('torch', 'transformers', 'numpy', 'mcp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
