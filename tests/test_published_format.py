"""AgentWorldBench as published: message construction, stored marker, judging inputs."""

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.bench.score import score_records
from agentworld.cli import app
from agentworld.data.chat import trajectory_chat
from agentworld.judge.llm import LLMJudge
from agentworld.judge.prompt import JUDGE_PROMPT_VERSION, judge_messages, judge_system_prompt, load_judge_prompts
from agentworld.models import WorldModel
from agentworld.models.base import Backend, Completion, Prediction
from agentworld.parsing import Status
from agentworld.prompts import MARKER, build_messages, sample_messages, trajectory_messages
from agentworld.records.bench import BenchSample, as_text, load_bench_dir, mark_responses, reencode_bench_dir
from agentworld.records.select import make_sample
from agentworld.records.trajectory import Trajectory, Turn
from agentworld.records.verdict import DIMENSIONS
from agentworld.sim.env import SimEnv
from agentworld.sim.loading import load_start

REPO = Path(__file__).resolve().parents[1]
BENCHES = [REPO / "tests" / "fixtures" / "awbench", REPO / "benchmarks" / "local"]
M = MARKER + "\n"
runner = CliRunner()


def record(**kw) -> BenchSample:
    base = {"task": "terminal", "id": 1, "current_prompt": "", "system_str": "", "total_turns": 3}
    return BenchSample.model_validate({**base, **kw})


def test_multi_turn_record_messages_are_verbatim():
    s = record(
        prompt=["ls", "cat a.txt", "rm a.txt"],
        response=[M + "a.txt\n$ ", M + "alpha\n$ ", M + "$ "],
        current_prompt="cat a.txt",
        system_str="SYS",
        turn_idx=2,
    )
    assert sample_messages(s) == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": "**Environment Observation:**\na.txt\n$ "},
        {"role": "user", "content": "cat a.txt"},
    ]


def test_empty_system_is_not_sent_and_unmarked_history_is_not_rewrapped():
    s = record(prompt=["a", "b", "c"], response=["out a", "out b", "out c"], turn_idx=3, current_prompt="c")
    assert sample_messages(s) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "out a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "out b"},
        {"role": "user", "content": "c"},
    ]


def test_first_turn_and_structured_values():
    s = record(prompt=[{"name": "t", "arguments": {}}], response=[{"ok": True}], turn_idx=1, system_str=" ",
               current_prompt={"name": "t", "arguments": {}})
    # A system_str of one space is not empty: sent verbatim.
    assert sample_messages(s) == [
        {"role": "system", "content": " "},
        {"role": "user", "content": '{"name": "t", "arguments": {}}'},
    ]


@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.name)
def test_every_record_gets_the_published_construction(bench):
    samples = load_bench_dir(bench, strict=True).samples
    assert samples
    marked = 0
    for s in samples:
        msgs = sample_messages(s)
        has_system = msgs[0]["role"] == "system"
        assert has_system == bool(s.system_str), s.uid
        if has_system:
            assert msgs[0]["content"] == s.system_str
        body = msgs[1:] if has_system else msgs
        k = s.turn_idx - 1
        expected = []
        for a, r in zip(s.prompt[:k], s.response[:k], strict=False):
            expected += [{"role": "user", "content": as_text(a)}, {"role": "assistant", "content": as_text(r)}]
        expected.append({"role": "user", "content": as_text(s.prompt[k])})
        assert body == expected, s.uid
        marked += all(isinstance(r, str) and r.lstrip().startswith(MARKER) for r in s.response)
    if bench.name == "local":
        assert marked == len(samples)  # the local set stores responses as published
    else:
        assert marked >= 7  # one official-format record per domain at least


@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.name)
@pytest.mark.parametrize("tagged", [False, True], ids=["untagged", "tagged"])
def test_ground_truth_as_prediction_scores_100_on_every_domain(bench, tagged):
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from ground_truth_scores import ground_truth_records
    finally:
        sys.path.pop(0)
    samples = load_bench_dir(bench, strict=True).samples
    records = ground_truth_records(samples, "tagged" if tagged else "untagged")
    assert all(r.prediction_status == ("complete" if tagged else "untagged") for r in records)
    [group] = score_records(records).groups
    assert {d: b.total.score for d, b in group.domains.items()} == dict.fromkeys(group.domains, 100.0)
    assert all(c.score == 100.0 for b in group.domains.values() for c in b.dimensions.values())
    assert group.overall.total.score == 100.0 and group.overall.valid == len(samples)
    assert group.overall.statuses["untagged" if not tagged else "complete"] == len(samples)


def traj() -> Trajectory:
    return Trajectory(id="t1", domain="terminal", turns=[
        Turn(action="echo a", observation="$ echo a\na\n$ "),
        Turn(action="echo b", observation="$ echo b\nb\n$ "),
        Turn(action="echo c", observation="$ echo c\nc\n$ "),
    ])


def test_records_we_write_carry_the_marker_and_trajectories_render_like_records():
    t = traj()
    s = make_sample(t, 3, system_str="SYS")
    assert s.response == [M + "$ echo a\na\n$ ", M + "$ echo b\nb\n$ ", M + "$ echo c\nc\n$ "]
    assert s.ground_truth == "$ echo c\nc\n$"
    msgs = trajectory_messages(t, 3)
    assert msgs[1:] == sample_messages(make_sample(t, 3))[1:]
    assert msgs[2] == {"role": "assistant", "content": "**Environment Observation:**\n$ echo a\na\n$ "}
    # Plain histories (sessions, the simulator) are replayed in the same stored form.
    assert build_messages("", [("echo a", "$ echo a\na\n$ ")], "echo b") == msgs[1:4]
    # CPT: every turn in the stored form, so each turn is the context the next one sees.
    chat = trajectory_chat(t, "SYS")
    assert [m["content"] for m in chat if m["role"] == "assistant"] == s.response
    assert chat[:-2] == sample_messages(s)[:-1]


def test_reencode_is_idempotent_and_keeps_everything_else(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    rec = {"task": "x/mcp", "id": 3, "prompt": ["a", "b"], "response": ["A", M + "B"], "current_prompt": "b",
           "system_str": "", "turn_idx": 2, "total_turns": 2, "zeta": [1, {"k": None}], "alpha": "ü"}
    (src / "mcp_test.jsonl").write_text(json.dumps(rec, ensure_ascii=False) + "\n" + json.dumps({**rec, "id": "s"}) + "\n")
    res = runner.invoke(app, ["data", "reencode", str(src), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "2 records, 2 re-encoded" in res.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "mcp_test.jsonl").read_text().splitlines()]
    assert [list(r) for r in rows] == [list(rec)] * 2
    assert rows[0] == {**rec, "response": [M + "A", M + "B"]} and rows[1]["id"] == "s"
    before = (tmp_path / "out" / "mcp_test.jsonl").read_bytes()
    assert [r.changed for r in reencode_bench_dir(tmp_path / "out")] == [0]
    assert (tmp_path / "out" / "mcp_test.jsonl").read_bytes() == before
    s = load_bench_dir(tmp_path / "out").samples[0]
    assert mark_responses(s) is s


def test_reencode_errors_are_clear(tmp_path):
    res = runner.invoke(app, ["data", "reencode", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not found" in res.output
    (tmp_path / "terminal_test.jsonl").write_text('{"task": "terminal"}\n')
    res = runner.invoke(app, ["data", "reencode", str(tmp_path)], env={"COLUMNS": "300"})
    assert res.exit_code == 2 and "terminal_test.jsonl:1" in res.output


def test_session_from_a_record_replays_it_verbatim():
    path = REPO / "tests" / "fixtures" / "awbench" / "terminal_test.jsonl"
    start = load_start(path, record_id="9001")
    s = next(x for x in load_bench_dir(path.parent).samples if x.id == 9001)
    env = SimEnv(WorldModel(Recording("")), start.scenario, use_ledger=False)
    env.reset(options={"history": start.history})
    assert env.messages_for(start.action) == sample_messages(s)
    assert start.history == s.stored_history()


class Recording(Backend):
    """A judge endpoint stand-in that records what it was sent and answers one verdict."""

    name = "recording"

    def __init__(self, reply: str):
        self.reply = reply
        self.sent: list[list[dict]] = []

    @property
    def model_id(self) -> str:
        return "recording"

    async def complete(self, messages, config, *, domain=None):
        self.sent.append(messages)
        return [Completion(text=self.reply)]


def test_judge_request_parts_in_published_order_without_markers(awbench_dir):
    s = next(x for x in load_bench_dir(awbench_dir).samples if x.id == 9001)
    [system, user] = judge_messages(s, M + "PREDICTED")
    assert system["content"] == judge_system_prompt("terminal")
    text = user["content"]
    heads = ["# History", "# Current Turn:", "## Predicted Observation", "## Ground Truth Observation", "# Scoring Instructions"]
    assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    assert MARKER not in text
    assert "PREDICTED" in text and "alpha\nroot@box:/tmp/w#" in text
    assert text.index("echo alpha > a.txt") > text.index("# Current Turn:")  # the current action
    assert "<final_evaluation>" in text.split("# Scoring Instructions")[1]


def test_judge_prompts_folder(tmp_path, awbench_dir):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_judge_prompts(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="judge_system_prompt.txt"):
        load_judge_prompts(tmp_path)
    (tmp_path / "terminal").mkdir()
    (tmp_path / "terminal" / "judge_system_prompt.txt").write_text("STAND-IN terminal judge rubric\n")
    (tmp_path / "mcp").mkdir()  # a folder without the file falls back
    prompts = load_judge_prompts(tmp_path)
    assert prompts.texts == {"terminal": "STAND-IN terminal judge rubric\n"}
    assert "mcp" in prompts.missing and "terminal" not in prompts.missing

    verdict = '<final_evaluation>{"scores": {"format": "4/5", "factuality": 5, "consistency": 5, "realism": 4.5, "quality": 9}}</final_evaluation>'
    backend = Recording(verdict)
    # Their system prompts under our user message: the agentworld style with the files.
    judge = LLMJudge(WorldModel(backend), prompts=prompts, style="agentworld")
    with pytest.raises(ValueError, match="published judge user template"):
        LLMJudge(WorldModel(backend), prompts=prompts)  # the default with files: published, which needs it
    by_id = {x.id: x for x in load_bench_dir(awbench_dir).samples}
    pred = Prediction(text="x", observation="alpha", status=Status.untagged)
    j_term = asyncio.run(judge.score(by_id[9001], pred))
    j_mcp = asyncio.run(judge.score(by_id[9002], pred))
    assert backend.sent[0][0]["content"] == "STAND-IN terminal judge rubric\n"
    assert backend.sent[1][0]["content"] == judge_system_prompt("mcp")
    assert j_term.scores == dict(zip(DIMENSIONS, [4, 5, 5, 4, 5], strict=True))
    assert j_term.details["prompt_version"].startswith("file:") and j_mcp.details["prompt_version"] == JUDGE_PROMPT_VERSION
    # The prompt files are part of the judge's settings, so a resume with other files is refused.
    assert LLMJudge(WorldModel(backend)).settings["prompt_version"] == JUDGE_PROMPT_VERSION
    assert judge.settings["prompt_version"].startswith("files:") and "terminal=file:" in judge.settings["prompt_version"]


def test_bench_judge_cli_judge_prompts(tmp_path, awbench_dir):
    preds = tmp_path / "p.jsonl"
    preds.write_text("")
    res = runner.invoke(app, ["bench", "judge", str(awbench_dir), "-p", str(preds), "--judge-prompts", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "judge prompt folder not found" in res.output
    (tmp_path / "jp" / "web").mkdir(parents=True)
    (tmp_path / "jp" / "web" / "judge_system_prompt.txt").write_text("stand-in\n")
    res = runner.invoke(app, ["bench", "judge", str(awbench_dir), "-p", str(preds), "--judge-prompts", str(tmp_path / "jp")],
                        env={"COLUMNS": "200"})
    assert res.exit_code == 2 and "no published judge user template" in res.output and "--judge-style agentworld" in res.output
    res = runner.invoke(app, ["bench", "judge", str(awbench_dir), "-p", str(preds), "--judge-prompts", str(tmp_path / "jp"),
                              "--judge-style", "agentworld"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "judge system prompts from" in res.output and "built-in judge prompt is used" in res.output
    res = runner.invoke(app, ["bench", "judge", str(awbench_dir), "-p", str(preds), "--judge-style", "published"])
    assert res.exit_code == 2 and "needs the published judge prompts" in res.output


def test_a_marker_left_inside_a_prediction_is_not_environment_output(awbench_dir):
    from agentworld.judge.rules import RuleScorer

    s = next(x for x in load_bench_dir(awbench_dir).samples if x.id == 9001)
    raw = f"{M}{s.ground_truth}\n{M}{s.ground_truth}"
    from agentworld.parsing import parse_prediction

    p = parse_prediction(raw)
    assert p.status is Status.untagged and p.observation.startswith("root@box") and MARKER in p.observation
    j = RuleScorer().score_sync(s, Prediction(text=raw, observation=p.observation, status=p.status))
    assert j.scores["realism"] < 5 and MARKER in j.details["meta_text"][0]
