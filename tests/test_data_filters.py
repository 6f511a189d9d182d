"""Trajectory filters (each reason counted) and the leakage-checked split."""

from __future__ import annotations

import json
from pathlib import Path

from agentworld.data.filters import (
    SKIP_LOSS,
    FilterConfig,
    FilterReport,
    called_tools,
    filter_trajectories,
)
from agentworld.data.split import check_leakage, split_trajectories
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories

EXAMPLES = Path(__file__).parents[1] / "examples" / "trajectories.jsonl"
TOOLS = [{"name": "read_file", "inputSchema": {}}, {"type": "function", "function": {"name": "write_file"}}]


def traj(tid: str, domain: str, turns: list[tuple[str, str]], **kw) -> Trajectory:
    return Trajectory(id=tid, domain=domain, turns=[Turn(action=a, observation=o) for a, o in turns], **kw)


def call(name: str, **args) -> str:
    return json.dumps({"name": name, "arguments": args})


def run(trajs: list[Trajectory], **cfg) -> tuple[list[Trajectory], FilterReport]:
    report = FilterReport()
    kept = list(filter_trajectories(trajs, FilterConfig(**cfg), report))
    return kept, report


def test_too_few_turns_counted_after_turn_removal() -> None:
    kept, rep = run(
        [
            traj("one", "terminal", [("ls", "a b")]),
            traj("empty-then-one", "terminal", [("  ", "x"), ("ls", "a")]),
            traj("two", "terminal", [("ls", "a"), ("pwd", "/w")]),
        ]
    )
    assert [t.id for t in kept] == ["two"]
    c = rep.counts["terminal"]
    assert c["dropped_too_few_turns"] == 2
    assert c["turns_removed_empty_action"] == 1
    assert c["trajectories_in"] == 3 and c["trajectories_kept"] == 1


def test_empty_actions_removed_but_terminal_wait_is_not_empty() -> None:
    wait = json.dumps([{"keystrokes": "", "duration": 3}])
    kept, rep = run([traj("t", "terminal", [("ls", "a"), ("{}", "?"), (wait, "done"), ("null", "?"), ("pwd", "/")])])
    assert [t.action for t in kept[0].turns] == ["ls", wait, "pwd"]
    assert rep.counts["terminal"]["turns_removed_empty_action"] == 2


def test_undeclared_tools_drop_mcp_and_swe_only() -> None:
    ok = traj("ok", "mcp", [(call("read_file", path="a"), "x"), (call("write_file", path="a"), "ok")], tools=TOOLS)
    bad = traj("bad", "mcp", [(call("read_file", path="a"), "x"), (call("delete_file", path="a"), "ok")], tools=TOOLS)
    garbled = traj("garbled", "swe", [(call("read_file"), "x"), ("read the file please", "?")], tools=TOOLS)
    no_tools = traj("none", "swe", [(call("read_file"), "x"), (call("read_file"), "y")])
    term = traj("term", "terminal", [(call("anything"), "x"), ("ls", "y")])
    kept, rep = run([ok, bad, garbled, no_tools, term])
    assert [t.id for t in kept] == ["ok", "term"]
    assert rep.counts["mcp"]["dropped_undeclared_tool"] == 1
    assert rep.counts["swe"]["dropped_undeclared_tool"] == 2
    assert called_tools(json.dumps([{"function": {"name": "a"}}, {"tool": "b"}, 3])) == ["a", "b", None]
    kept, _ = run([bad], drop_undeclared_tools=False)
    assert [t.id for t in kept] == ["bad"]


def test_gui_env_failures_and_no_change_turns() -> None:
    tree1, tree2 = "[1] button 'OK'", "[1] button 'OK'\n[2] text 'done'"
    crashed = traj("crash", "web", [("click(1)", tree1), ("click(2)", "Error: net::ERR_CONNECTION_REFUSED")])
    flagged = traj("flag", "android", [("tap(1)", tree1), ("tap(2)", tree2)])
    flagged.turns[1].metadata["env_failure"] = "adb disconnected"
    fine = traj("fine", "web", [("click(1)", tree1), ("scroll(0, 1)", tree1 + "  "), ("click(2)", tree2)])
    # an agent error is a legitimate observation in a text domain, never an env failure
    text_err = traj("text", "terminal", [("curl x", "curl: (6) net::ERR_NAME"), ("ls", "a")])
    kept, rep = run([crashed, flagged, fine, text_err])
    assert [t.id for t in kept] == ["fine", "text"]
    assert rep.counts["web"]["dropped_env_failure"] == 1
    assert rep.counts["android"]["dropped_env_failure"] == 1
    assert [t.action for t in kept[0].turns] == ["click(1)", "click(2)"]
    assert rep.counts["web"]["turns_removed_no_change"] == 1


def test_retry_cycle_keeps_the_chain_and_drops_the_garbage_loss() -> None:
    t = traj(
        "retry",
        "terminal",
        [
            ("lss -la", "bash: lss: command not found"),
            ("ls -la", "total 0"),
            ("cat missing.txt", "cat: missing.txt: No such file or directory"),
            ("cat other.txt", "hello"),
        ],
    )
    kept, rep = run([t])
    turns = kept[0].turns
    assert len(turns) == 4  # the chain is intact
    assert turns[0].metadata.get(SKIP_LOSS) == "retry_cycle"
    # a well-formed action failing on the state is worth learning: no skip
    assert not any(x.metadata.get(SKIP_LOSS) for x in turns[1:])
    assert rep.counts["terminal"]["turns_loss_skipped_retry"] == 1
    assert SKIP_LOSS not in t.turns[0].metadata  # the input is not modified
    # an unrelated next action after a rejected one is not a retry
    kept, _ = run([traj("x", "terminal", [("lss", "bash: lss: command not found"), ("python3 build_all.py", "ok")])])
    assert not kept[0].turns[0].metadata.get(SKIP_LOSS)


def test_retry_of_a_tool_call_needs_the_same_tool() -> None:
    rejected = '{"content": [{"type": "text", "text": "1 validation error for addArguments"}], "isError": true}'
    bad = call("git_add", repo_path="/workspace/repo", files=[])
    other = call("git_log", repo_path="/workspace/repo", max_count=1)
    fixed = call("git_add", repo_path="/workspace/repo", files=["a.txt"])
    kept, _ = run([traj("a", "mcp", [(bad, rejected), (other, "log")], tools=[{"name": "git_add"}, {"name": "git_log"}])])
    assert not kept[0].turns[0].metadata.get(SKIP_LOSS)
    kept, _ = run([traj("b", "mcp", [(bad, rejected), (fixed, "ok")], tools=[{"name": "git_add"}])])
    assert kept[0].turns[0].metadata.get(SKIP_LOSS) == "retry_cycle"
    # a long page that merely mentions "usage:" is content, not a rejection
    page = "NAME\n  tool - does things\nSYNOPSIS\n  usage: tool [-h]\n" + "text " * 400
    extract = call("web_extractor", url="https://a.example/man")
    kept, _ = run([traj("c", "search", [(extract, page), (call("web_extractor", url="https://b.example/x"), "ok")])])
    assert not kept[0].turns[0].metadata.get(SKIP_LOSS)


def test_examples_pass_the_filters() -> None:
    trajs = read_trajectories(EXAMPLES).items
    kept, rep = run(trajs)
    assert len(kept) == len(trajs)
    assert rep.total("trajectories_kept") == len(trajs)


def _name(n: int) -> str:
    """Letters only: fingerprints mask digits, so numbered names would all look alike."""
    s = ""
    while True:
        s = chr(97 + n % 26) + s
        n //= 26
        if not n:
            return s


def _family(prefix: str, n: int, k: int = 10) -> list[Trajectory]:
    out = []
    for i in range(n):
        turns = [(f"cmd {prefix} {_name(j)}", f"out {prefix} {_name(j)}") for j in range(k)]
        turns[-1] = (f"final {prefix} {_name(i)}", f"variant {_name(i)}")  # 9 of 10 turns shared: jaccard 9/11
        out.append(traj(f"{prefix}-{i}", "terminal", turns))
    return out


def test_split_by_trajectory_keeps_near_duplicates_together() -> None:
    trajs = []
    for f in range(40):
        trajs += _family(f"fam{_name(f)}", 3)
    for i in range(100):
        trajs.append(traj(f"solo-{i}", "terminal", [(f"echo {_name(i)}", _name(i)), ("pwd", "/workspace")]))
    split = split_trajectories(trajs, test_fraction=0.3, seed=1)
    assert len(split.train) + len(split.test) == len(trajs)
    assert 0.15 < len(split.test) / len(trajs) < 0.45
    side = {t.id: "test" for t in split.test} | {t.id: "train" for t in split.train}
    for f in range(40):
        assert len({side[f"fam{_name(f)}-{i}"] for i in range(3)}) == 1
    rep = check_leakage(split.train, split.test)
    assert rep.ok
    # "pwd" -> "/workspace" is shared vocabulary: counted, not leakage
    assert rep.shared_turns > 0
    # the same split is drawn again, whatever the input order
    again = split_trajectories(list(reversed(trajs)), test_fraction=0.3, seed=1)
    assert {t.id for t in again.test} == {t.id for t in split.test}


def test_leakage_check_catches_a_naive_turn_split() -> None:
    fam = _family("dup", 2)
    # 9 of 10 turns shared: shingle Jaccard ~0.85, under the 0.9 default, but the shared
    # turns are a leak by themselves
    rep = check_leakage([fam[0]], [fam[1]])
    assert not rep.ok and rep.turn_copies
    rep = check_leakage([fam[0]], [fam[1]], near_duplicate=0.8)
    assert not rep.ok and rep.near_duplicates[0][:2] == ("dup-1", "dup-0")
    rep = check_leakage([fam[0]], [fam[0]])
    assert rep.shared_ids == ["dup-0"]
    # a rerun of the same episode differs only in runtime numbers (pid, time): still a duplicate
    a = traj("run-a", "terminal", [("sleep 1 &", "[1] 4242"), ("date +%s", "1764451200"), ("ps", "4242 sleep")])
    b = traj("run-b", "terminal", [("sleep 1 &", "[1] 5151"), ("date +%s", "1764451299"), ("ps", "5151 sleep")])
    assert not check_leakage([a], [b]).ok
