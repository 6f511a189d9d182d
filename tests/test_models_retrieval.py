"""The retrieval backend over real benchmark files and trajectory stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.models import BackendError, GenerationConfig, WorldModel, load_backend
from agentworld.prompts import build_messages, build_system_prompt, trajectory_messages
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories


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


async def test_nearest_turn_of_the_right_domain(tmp_path: Path) -> None:
    backend = load_backend("retrieval", source=_store(tmp_path))
    assert backend.num_docs == {"terminal": 3, "search": 1}
    wm = WorldModel(backend)
    system = build_system_prompt("terminal")
    [pred] = await wm.predict(build_messages(system, [("ls", "a.txt  b.txt")], "cat a.txt"))
    assert pred.ok and pred.observation == "alpha contents"
    # The system prompt names the domain: a query sharing no words with terminal turns
    # still answers from the terminal index, never from search.
    [pred] = await wm.predict(build_messages(system, [], "python release"))
    assert pred.ok and pred.observation != "[1] https://python.org"


async def test_domain_option_and_n_samples(tmp_path: Path) -> None:
    backend = load_backend("retrieval", source=_store(tmp_path), domain="terminal", context_turns=0)
    wm = WorldModel(backend)
    preds = await wm.predict(build_messages("sys", [], "python3 --version"), GenerationConfig(n=4))
    assert [p.observation for p in preds][0] == "Python 3.11.2"
    assert len({p.observation for p in preds}) == 3  # 3 distinct past turns, then repeats
    assert backend.model_id.startswith("bm25:trajs.jsonl@") and ":ctx0" in backend.model_id


def test_bench_dir_source_answers_its_own_turns(awbench_dir: Path) -> None:
    bench = load_bench_dir(awbench_dir)
    wm = WorldModel(load_backend("retrieval", source=awbench_dir))
    exact = 0
    for s in bench.samples:
        [pred] = wm.predict_sync(build_messages(s.system_str, s.history(), s.action))
        assert pred.ok
        exact += pred.observation == s.ground_truth.strip("\n").rstrip()
    # Indexed samples are found again (this is why one indexes training data only).
    assert exact >= len(bench.samples) * 0.8


def test_trajectory_messages_round_trip(tmp_path: Path) -> None:
    path = _store(tmp_path)
    backend = load_backend("retrieval", source=path)
    traj = Trajectory(id="q", domain="terminal", turns=[Turn(action="ls", observation="a.txt  b.txt"), Turn(action="cat a.txt", observation="?")])
    [(score, doc)] = backend.nearest(trajectory_messages(traj, 2))
    assert doc.observation == "alpha contents" and score > 0


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_backend("retrieval", source=tmp_path / "missing.jsonl")
    with pytest.raises(BackendError):
        load_backend("retrieval", source=_store(tmp_path), domain="web")
    with pytest.raises(ValueError, match="unknown backend"):
        load_backend("nope")
