import json

import pytest

from agentworld.jsonl import JsonlAppender, read_jsonl
from agentworld.prompts import build_system_prompt, sample_messages, trajectory_messages
from agentworld.records.select import select_turns, spread_turns, trajectories_to_samples
from agentworld.records.trajectory import SimContext, Trajectory, Turn, read_trajectories, write_trajectories


def make_traj(i: int, n: int, domain: str = "terminal") -> Trajectory:
    return Trajectory(
        id=f"traj-{i}",
        domain=domain,
        task_description="Count the lines of notes.txt",
        initial_state="Debian 12, bash 5.2, cwd /workspace",
        turns=[Turn(action=f'[{{"keystrokes": "echo {k}\\n", "duration": 0.5}}]', observation=f"$ echo {k}\n{k}\n$ ")
               for k in range(1, n + 1)],
    )


def test_trajectory_round_trip_keeps_unknown_fields(tmp_path):
    t = make_traj(1, 3)
    data = t.model_dump(mode="json")
    data["custom"] = {"a": 1}
    data["turns"][0]["screen_size"] = [80, 24]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(data) + "\n")
    loaded = read_trajectories(path)
    write_trajectories(tmp_path / "u.jsonl", loaded.items)
    again = json.loads((tmp_path / "u.jsonl").read_text())
    assert again == data
    assert loaded.items[0].turns[0].action_json()[0]["duration"] == 0.5


def test_trajectory_errors_name_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    good = make_traj(1, 2).model_dump_json()
    path.write_text("\n".join([good, '{"id": 3, "domain": "tv", "turns": []}', "{oops", good]) + "\n")
    loaded = read_trajectories(path)
    assert len(loaded) == 2 and loaded.lines == [1, 4]
    assert [e.line for e in loaded.errors] == [2, 3]
    assert "domain" in loaded.errors[0].message


def test_appender_repairs_a_torn_tail(tmp_path):
    path = tmp_path / "r.jsonl"
    with JsonlAppender(path, fsync=False) as app:
        app.append(make_traj(1, 1))
    with path.open("a") as fh:
        fh.write('{"id": "torn", "dom')  # a writer killed mid-line
    with JsonlAppender(path, fsync=False) as app:
        app.append(make_traj(2, 1))
    loaded = read_jsonl(path, Trajectory, strict=True)
    assert [t.id for t in loaded] == ["traj-1", "traj-2"]


@pytest.mark.parametrize("n,expected", [(1, [1]), (5, [1, 2, 3, 4, 5]), (6, [1, 2, 3, 5, 6]), (20, [1, 6, 11, 15, 20])])
def test_spread_turns(n, expected):
    assert spread_turns(n) == expected


def test_turn_policies_and_seeded_fraction():
    trajs = [make_traj(i, 9) for i in range(40)]
    assert select_turns(trajs[0], "all") == list(range(1, 10))
    rand = [select_turns(t, "random", seed=7) for t in trajs]
    assert rand == [select_turns(t, "random", seed=7) for t in trajs]  # reproducible
    assert len({r[0] for r in rand}) > 3  # and not constant
    assert rand != [select_turns(t, "random", seed=8) for t in trajs]
    full = list(trajectories_to_samples(trajs, policy="spread"))
    assert len(full) == 40 * 5
    half = list(trajectories_to_samples(trajs, policy="spread", fraction=0.5, seed=1))
    assert 60 < len(half) < 140
    # Order-independent: a trajectory's kept samples do not depend on its neighbours.
    alone = list(trajectories_to_samples(trajs[3:4], policy="spread", fraction=0.5, seed=1))
    assert [s.uid for s in alone] == [s.uid for s in half if s.trajectory_id == "traj-3"]


def test_samples_match_trajectory_messages():
    t = make_traj(1, 4)
    s = next(iter(trajectories_to_samples([t], policy="all")))
    assert s.turn_idx == 1 and s.total_turns == 4
    samples = list(trajectories_to_samples([t], policy="all"))
    for s in samples:
        assert sample_messages(s) == trajectory_messages(t, s.turn_idx)
        assert s.response[s.turn_idx - 1] == "**Environment Observation:**\n" + t.turns[s.turn_idx - 1].observation
        assert s.ground_truth == t.turns[s.turn_idx - 1].observation.strip()
        assert s.prompt[-1] == s.current_prompt


def test_messages_layout_and_system_prompt_parts():
    t = make_traj(1, 3)
    msgs = trajectory_messages(t, 3)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[-1]["content"] == t.turns[2].action
    assert msgs[2]["content"] == "**Environment Observation:**\n$ echo 1\n1\n$ "
    system = msgs[0]["content"]
    assert "Count the lines of notes.txt" in system and "Debian 12" in system
    assert "<predicted_observation>" in system and "terminal" in system
    tools = [{"name": "git_status", "inputSchema": {"type": "object"}}]
    mcp = build_system_prompt("mcp", SimContext(tools=tools, simulation_instruction="every call times out"))
    assert "git_status" in mcp and "every call times out" in mcp
    assert "Demonstrations" not in mcp  # empty parts are left out
    variants = {build_system_prompt("web", variant=v) for v in range(3)}
    assert len(variants) == 3


def test_sample_uses_its_own_system_str_verbatim(awbench_dir):
    from agentworld.records.bench import load_bench_dir

    s = load_bench_dir(awbench_dir, domains=["swe"]).samples[0]
    assert sample_messages(s)[0]["content"] == s.system_str
