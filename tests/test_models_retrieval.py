"""The retrieval floor over real recorded trajectories (benchmarks/local) and small stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld.models import BackendError, GenerationConfig, WorldModel, load_backend
from agentworld.models.retrieval import PastTurn, action_key, adapt_terminal, load_turns
from agentworld.prompts import build_messages, build_system_prompt, sample_messages, trajectory_messages
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

LOCAL = Path(__file__).resolve().parents[1] / "benchmarks" / "local"
# Every recorded domain (terminal, mcp, search, swe, web...): one trajectory file each.
DOMAINS4 = tuple(sorted(p.stem for p in (LOCAL / "trajectories").glob("*.jsonl") if not p.stem.endswith(".failures")))


def _keys(*keys: str) -> str:
    return json.dumps([{"keystrokes": k, "duration": 1.0} for k in keys])


def _store(tmp_path: Path) -> Path:
    trajs = [
        Trajectory(
            id="t1",
            domain="terminal",
            turns=[
                Turn(action="ls", observation="a.txt  b.txt"),
                Turn(action="cat a.txt", observation="alpha contents"),
                Turn(action="python3 --version", observation="Python 3.11.2"),
            ],
        ),
        Trajectory(
            id="s1",
            domain="search",
            turns=[Turn(action='{"name": "web_search", "query": "python release"}', observation="[1] https://python.org")],
        ),
    ]
    path = tmp_path / "trajs.jsonl"
    write_trajectories(path, trajs)
    return path


@pytest.fixture(scope="module")
def local_floor():
    """The floor over every recorded local trajectory (test-split ones are skipped)."""
    return load_backend("retrieval", source=LOCAL / "trajectories")


def _trajectory_splits() -> dict[str, tuple[str, str | None]]:
    out = {}
    for d in DOMAINS4:
        for line in (LOCAL / "trajectories" / f"{d}.jsonl").read_text().splitlines():
            row = json.loads(line)
            out[row["id"]] = (row["domain"], row.get("provenance", {}).get("split"))
    return out


def test_never_crosses_domains_on_held_out_recordings(local_floor) -> None:
    """Index every recorded domain, ask each held-out sample in its domain: every answer
    comes from a train trajectory of that same domain."""
    assert set(local_floor.num_docs) == set(DOMAINS4)
    splits = _trajectory_splits()
    bench = load_bench_dir(LOCAL)
    asked = 0
    for domain, samples in bench.by_domain().items():
        for s in samples[::10]:
            for _, turn in local_floor.nearest(sample_messages(s), k=3, domain=s.domain):
                assert splits[turn.trajectory_id] == (domain, "train"), (s.uid, turn.trajectory_id)
            asked += 1
    assert asked >= 100


async def test_answers_in_the_domain_passed(local_floor) -> None:
    """Held-out terminal samples are answered with terminal screens, never tool results;
    with no domain the multi-domain floor refuses and says what to pass."""
    wm = WorldModel(local_floor)
    terminal = load_bench_dir(LOCAL).by_domain()["terminal"][:12]
    for s in terminal:
        [pred] = await wm.predict_sample(s)
        assert pred.ok, pred.error
        # A terminal screen (a shell, or an interactive program's), never a JSON tool result.
        assert '"content"' not in pred.observation and not pred.observation.lstrip().startswith("{")
    [pred] = await wm.predict(sample_messages(terminal[0]))
    assert pred.error and "domain=" in pred.error and "never answers across domains" in pred.error
    [pred] = await wm.predict(sample_messages(terminal[0]), domain="android")
    assert pred.error and "no android turns" in pred.error


async def test_domain_option_single_domain_index_and_n_samples(tmp_path: Path) -> None:
    backend = load_backend("retrieval", source=_store(tmp_path), domain="terminal", context_turns=0)
    wm = WorldModel(backend)
    # The option fixes the index: no per-call domain needed.
    preds = await wm.predict(build_messages("sys", [], "python3 --version"), GenerationConfig(n=4))
    assert [p.observation for p in preds][0] == "Python 3.11.2"
    assert len({p.observation for p in preds}) == 3  # 3 distinct past turns, then repeats
    assert backend.model_id.startswith("bm25:trajs.jsonl@") and ":ctx0" in backend.model_id
    # A call for another domain than the one indexed is refused.
    [pred] = await wm.predict(build_messages("sys", [], "ls"), domain="search")
    assert pred.error and "no search turns" in pred.error


async def test_nearest_turn_of_the_right_domain(tmp_path: Path) -> None:
    backend = load_backend("retrieval", source=_store(tmp_path))
    assert backend.num_docs == {"terminal": 3, "search": 1}
    wm = WorldModel(backend)
    system = build_system_prompt("terminal")
    [pred] = await wm.predict(build_messages(system, [("ls", "a.txt  b.txt")], "cat a.txt"), domain="terminal")
    assert pred.ok and pred.observation == "alpha contents"
    # Sharing words with the search turn only: still answered from the terminal index.
    [pred] = await wm.predict(build_messages(system, [], "python release"), domain="terminal")
    assert pred.ok and pred.observation != "[1] https://python.org"


def test_terminal_key_weighs_commands_and_control_keys() -> None:
    key = action_key("terminal", _keys("grep -n foo notes.txt\n")).split()
    assert key.count("cmd_grep") == 3 and key.count("notes") == 2
    assert action_key("terminal", _keys("C-c")).split() == ["key_c_c"] * 3
    assert "typed_no_enter" in action_key("terminal", _keys("python3"))
    assert action_key("terminal", _keys("")) == "key_wait"
    tool = action_key("mcp", '{"name": "read_file", "arguments": {"path": "/workspace/a.txt"}}').split()
    assert tool.count("tool_read_file") == 3 and "arg_path" in tool and "workspace" in tool
    swe = action_key("swe", '{"name": "bash", "arguments": {"command": "cd /workspace/parse && ls -la"}}').split()
    assert "tool_bash" in swe and swe.count("cmd_ls") == 3 and swe.count("cmd_cd") == 3
    search = action_key("search", '{"name": "web_search", "arguments": {"query": "python asyncio"}}').split()
    assert search.count("asyncio") == 2


def test_command_name_decides_over_shared_words(local_floor) -> None:
    """``ls -l deploy.sh`` finds an ``ls`` turn, not one of the ``./deploy.sh`` turns."""
    msgs = build_messages("", [], _keys("ls -l deploy.sh\n"))
    [(_, turn)] = local_floor.nearest(msgs, domain="terminal")
    assert json.loads(turn.action)[0]["keystrokes"].startswith("ls ")
    # The train side holds one interrupt: a C-c finds it whatever else was typed.
    msgs = build_messages("", [], _keys("C-c"))
    [(_, turn)] = local_floor.nearest(msgs, domain="terminal")
    assert "C-c" in turn.action


def test_terminal_answer_adapted_to_this_session() -> None:
    past = PastTurn(
        [], _keys("cat mango.txt\n"),
        "root@sandbox:/workspace# cat mango.txt\ncat: mango.txt: No such file or directory\nroot@sandbox:/workspace#",
    )
    history = [(_keys("cd /tmp\n"), "root@sandbox:/workspace# cd /tmp\nroot@sandbox:/tmp#")]
    out = adapt_terminal(past.observation, past.action, _keys("cat kiwi.txt\n"), history)
    # The echo and the prompts change; the output stays as recorded (not deterministic).
    assert out == "root@sandbox:/tmp# cat kiwi.txt\ncat: mango.txt: No such file or directory\nroot@sandbox:/tmp#"
    # No session prompt known yet: the recorded prompt stays, the echo still changes.
    out = adapt_terminal(past.observation, past.action, _keys("cat kiwi.txt\n"), [])
    assert out.splitlines()[0] == "root@sandbox:/workspace# cat kiwi.txt"
    # A past command that changed directory keeps its final directory.
    cd = "root@sandbox:/workspace# cd /etc\nroot@sandbox:/etc#"
    assert adapt_terminal(cd, _keys("cd /etc\n"), _keys("cd /var\n"), history).splitlines() == [
        "root@sandbox:/tmp# cd /var", "root@sandbox:/etc#"]


async def test_adapt_off_answers_verbatim(tmp_path: Path) -> None:
    src = LOCAL / "trajectories" / "terminal.jsonl"
    msgs = build_messages("", [], _keys("ls -l deploy.sh\n"))
    raw = WorldModel(load_backend("retrieval", source=src, adapt=False))
    adapted = WorldModel(load_backend("retrieval", source=src))
    [a], [b] = await raw.predict(msgs, domain="terminal"), await adapted.predict(msgs, domain="terminal")
    assert a.observation.splitlines()[1:] == b.observation.splitlines()[1:]
    assert b.observation.splitlines()[0] == "root@sandbox:/workspace# ls -l deploy.sh"
    assert raw.model_id.endswith(":raw") and raw.model_id != adapted.model_id


def test_test_split_trajectories_are_never_indexed() -> None:
    turns = load_turns(LOCAL / "trajectories" / "terminal.jsonl")
    ids = {t.trajectory_id for t in turns["terminal"]}
    assert ids and all("-train-" in i for i in ids)


def test_bench_dir_source_answers_its_own_turns(awbench_dir: Path) -> None:
    bench = load_bench_dir(awbench_dir)
    wm = WorldModel(load_backend("retrieval", source=awbench_dir, adapt=False))
    exact = 0
    for s in bench.samples:
        [pred] = wm.predict_sync(build_messages(s.system_str, s.history(), s.action), domain=s.domain)
        assert pred.ok
        exact += pred.observation == s.ground_truth.strip("\n").rstrip()
    # Indexed samples are found again (this is why one indexes training data only).
    assert exact >= len(bench.samples) * 0.8


def test_trajectory_messages_round_trip(tmp_path: Path) -> None:
    path = _store(tmp_path)
    backend = load_backend("retrieval", source=path)
    traj = Trajectory(id="q", domain="terminal", turns=[Turn(action="ls", observation="a.txt  b.txt"), Turn(action="cat a.txt", observation="?")])
    [(score, doc)] = backend.nearest(trajectory_messages(traj, 2), domain="terminal")
    assert doc.observation == "alpha contents" and score > 0 and doc.trajectory_id == "t1"


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_backend("retrieval", source=tmp_path / "missing.jsonl")
    with pytest.raises(BackendError):
        load_backend("retrieval", source=_store(tmp_path), domain="web")
    with pytest.raises(ValueError, match="unknown backend"):
        load_backend("nope")
    backend = load_backend("retrieval", source=_store(tmp_path))
    with pytest.raises(BackendError, match="unknown domain 'nope'"):
        backend.nearest(build_messages("", [], "ls"), domain="nope")
