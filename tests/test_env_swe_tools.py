"""The SWE tools against a real sandbox: editor output and errors, bash, mutations."""

from __future__ import annotations

import ast
import random
import textwrap

import pytest

from agentworld.envs.sandbox import Sandbox, ensure_rootfs
from agentworld.envs.swe import mutate
from agentworld.envs.swe.editor import Editor, SandboxFiles, ToolError
from agentworld.envs.swe.tools import Bash, parse_action, tool_call

pytestmark = pytest.mark.sandbox

SOURCE = "def f(x):\n    if x > 0:\n        return x + 1\n    return x - 1\n\n\ndef g(x):\n    return x - 1\n"


@pytest.fixture(scope="module")
def sb():
    with Sandbox(rootfs=ensure_rootfs()) as s:
        yield s


@pytest.fixture
def ed(sb: Sandbox) -> Editor:
    sb.run("rm -rf /workspace/proj && mkdir -p /workspace/proj/pkg")
    sb.write_file("/workspace/proj/pkg/mod.py", SOURCE)
    return Editor(SandboxFiles(sb))


def test_view_file_and_range_print_cat_n(ed: Editor) -> None:
    out = ed({"command": "view", "path": "/workspace/proj/pkg/mod.py"})
    assert out.startswith("Here's the result of running `cat -n` on /workspace/proj/pkg/mod.py:\n")
    assert "     1\tdef f(x):\n     2\t    if x > 0:\n" in out
    out = ed({"command": "view", "path": "/workspace/proj/pkg/mod.py", "view_range": [7, 8]})
    assert out.splitlines()[1:] == ["     7\tdef g(x):", "     8\t    return x - 1"]
    out = ed({"command": "view", "path": "/workspace/proj/pkg/mod.py", "view_range": [8, -1]})
    assert out.splitlines()[1:] == ["     8\t    return x - 1", "     9\t"]


def test_view_directory_lists_two_levels_without_hidden(ed: Editor, sb: Sandbox) -> None:
    sb.run("mkdir -p /workspace/proj/.git/objects && touch /workspace/proj/.hidden")
    out = ed({"command": "view", "path": "/workspace/proj"})
    lines = out.splitlines()
    assert lines[0] == "Here's the files and directories up to 2 levels deep in /workspace/proj, excluding hidden items:"
    assert set(lines[1:]) == {"/workspace/proj", "/workspace/proj/pkg", "/workspace/proj/pkg/mod.py"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": "view", "path": "proj/pkg/mod.py"},
         "The path proj/pkg/mod.py is not an absolute path, it should start with `/`. Maybe you meant /workspace/proj/pkg/mod.py?"),
        ({"command": "view", "path": "/workspace/nope.py"}, "The path /workspace/nope.py does not exist. Please provide a valid path."),
        ({"command": "str_replace", "path": "/workspace/proj", "old_str": "a"},
         "The path /workspace/proj is a directory and only the `view` command can be used on directories"),
        ({"command": "create", "path": "/workspace/proj/pkg/mod.py", "file_text": ""},
         "File already exists at: /workspace/proj/pkg/mod.py. Cannot overwrite files using command `create`."),
        ({"command": "str_replace", "path": "/workspace/proj/pkg/mod.py", "old_str": "return x - 1", "new_str": "y"},
         "No replacement was performed. Multiple occurrences of old_str `return x - 1` in lines [4, 8]. Please ensure it is unique"),
        ({"command": "str_replace", "path": "/workspace/proj/pkg/mod.py", "old_str": "x * 2"},
         "No replacement was performed, old_str `x * 2` did not appear verbatim in /workspace/proj/pkg/mod.py."),
        ({"command": "insert", "path": "/workspace/proj/pkg/mod.py", "insert_line": 42, "new_str": "#"},
         "Invalid `insert_line` parameter: 42. It should be within the range of lines of the file: [0, 9]"),
        ({"command": "view", "path": "/workspace/proj/pkg/mod.py", "view_range": [3, 20]},
         "Invalid `view_range`: [3, 20]. Its second element `20` should be smaller than the number of lines in the file: `9`"),
        ({"command": "undo_edit", "path": "/workspace/proj/pkg/mod.py"}, "No edit history found for /workspace/proj/pkg/mod.py."),
        ({"command": "delete", "path": "/workspace/proj/pkg/mod.py"},
         "Unrecognized command delete. The allowed commands for the str_replace_editor tool are: view, create, str_replace, insert, undo_edit"),
    ],
)
def test_errors_use_the_tools_wording(ed: Editor, args: dict, message: str) -> None:
    with pytest.raises(ToolError) as err:
        ed(args)
    assert str(err.value) == message


def test_str_replace_insert_and_undo_change_the_real_file(ed: Editor, sb: Sandbox) -> None:
    path = "/workspace/proj/pkg/mod.py"
    out = ed({"command": "str_replace", "path": path, "old_str": "    if x > 0:", "new_str": "    if x >= 0:"})
    assert out.startswith(f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n")
    assert "     2\t    if x >= 0:" in out and out.endswith("Edit the file again if necessary.")
    assert "if x >= 0:" in sb.read_file(path)
    out = ed({"command": "insert", "path": path, "insert_line": 1, "new_str": "    # positive"})
    assert "     2\t    # positive\n" in out and "a snippet of the edited file" in out
    assert sb.read_file(path).split("\n")[1] == "    # positive"
    out = ed({"command": "undo_edit", "path": path})
    assert out.startswith(f"Last edit to {path} undone successfully. ")
    ed({"command": "undo_edit", "path": path})
    assert sb.read_file(path) == SOURCE


def test_create_makes_parent_folders(ed: Editor, sb: Sandbox) -> None:
    out = ed({"command": "create", "path": "/workspace/proj/new/deep/a.py", "file_text": "print(1)\n"})
    assert out == "File created successfully at: /workspace/proj/new/deep/a.py"
    assert sb.run("python3 /workspace/proj/new/deep/a.py").stdout == "1\n"


def test_symlink_to_host_path_stays_inside_the_sandbox(ed: Editor, sb: Sandbox, tmp_path) -> None:
    secret = tmp_path / "host.txt"
    secret.write_text("host\n")
    sb.run(f"mkdir -p {tmp_path} && ln -sf {secret} /workspace/proj/link")
    ed({"command": "create", "path": f"{tmp_path}/host.txt", "file_text": "sandbox\n"})
    assert secret.read_text() == "host\n"  # the write landed in the sandbox's own filesystem


def test_bash_keeps_cwd_merges_streams_and_reports_exit_codes(sb: Sandbox) -> None:
    bash = Bash(sb, timeout=3)
    out, code = bash("cd /workspace/proj && echo out && echo err >&2 && false")
    assert code == 1 and out == "out\nerr\n[Current working directory: /workspace/proj]\n[Command finished with exit code 1]"
    out, code = bash("pwd")
    assert out.startswith("/workspace/proj\n")
    out, code = bash("sleep 10")
    assert code is None and "[Command timed out after 3 seconds and was stopped]" in out


def test_parse_action_errors_are_agent_facing() -> None:
    assert parse_action(tool_call("bash", command="ls")) == ("bash", {"command": "ls"})
    assert parse_action('{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}') == ("bash", {"command": "ls"})
    for bad, msg in [("ls", "not a JSON tool call"), ('{"name": "rm"}', "unknown tool 'rm'"), ("[1]", "JSON object")]:
        with pytest.raises(ValueError, match=msg):
            parse_action(bad)


def test_mutations_change_one_line_and_still_parse() -> None:
    found = mutate.find_mutations(SOURCE, "mod.py")
    kinds = {m.kind for m in found}
    assert {"compare", "arith", "off_by_one", "negate"} <= kinds
    for m in found:
        mutated = mutate.apply_text(SOURCE, m)
        ast.parse(mutated)
        diff = [(a, b) for a, b in zip(SOURCE.split("\n"), mutated.split("\n"), strict=True) if a != b]
        assert diff == [(m.original_line, m.mutated_line)]
        assert m.function in {"f", "g"}
    cmp = next(m for m in found if m.kind == "compare")
    assert cmp.mutated_line == "    if x >= 0:"


def test_mutation_operators_on_tricky_source() -> None:
    src = textwrap.dedent('''
        def h(a, b):
            """Docstring with 1 < 2 and x + y."""
            if not a or b is None:
                return True
            return a[1:] if a not in b else a ** 2
    ''')
    by_kind = {}
    for m in mutate.find_mutations(src, "h.py"):
        by_kind.setdefault(m.kind, []).append(m.mutated_line.strip())
    assert "if not a and b is None:" in by_kind["boolop"]
    assert "if not a or b is not None:" in by_kind["compare"]
    assert "return False" in by_kind["return_bool"]
    assert "return a ** 2 if a not in b else a[1:]" in by_kind["ifexp"]
    assert "return a[1:] if a in b else a ** 2" in by_kind["compare"]
    assert by_kind["negate"] == ["if not (not a or b is None):"]
    assert "arith" not in by_kind  # `**` is never read as `*`, docstrings are never mutated
    [neg] = [m for m in mutate.find_mutations("def k(a):\n    if not a:\n        pass\n", "k.py") if m.kind == "negate"]
    assert neg.mutated_line == "    if a:"


def test_seeded_order_is_reproducible_and_mixes_kinds() -> None:
    found = mutate.find_mutations(SOURCE, "mod.py")
    a = mutate.ordered(found, random.Random(3))
    assert a == mutate.ordered(found, random.Random(3))
    assert len({m.kind for m in a[:4]}) == 4
