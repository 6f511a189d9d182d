"""The published protocol end to end against a real local HTTP endpoint that records every
request: what inference and the judge send (fields and messages, byte for byte), what is
judged (truncated text) and what is left out (empty answers, failed calls), and the
micro/macro overall and protocol that scores.json and the report state.

The prompt files here are stand-ins written by the test; the published text never lives
in the repository."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.judge.llm import LLMJudge
from agentworld.models import WorldModel, load_backend
from agentworld.parsing import Status
from agentworld.records.bench import load_bench_dir
from agentworld.records.prediction import Prediction

runner = CliRunner()
M = "**Environment Observation:**\n"


@dataclass
class Endpoint:
    """An OpenAI-compatible chat endpoint in this process; ``answer`` picks each reply."""

    url: str
    answer: Callable[[dict[str, Any]], tuple[int, str, str]]
    """body -> (HTTP status, content, finish_reason)."""
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def sent(self, model: str) -> list[dict[str, Any]]:
        return [b for b in self.bodies if b["model"] == model]


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint(url="", answer=lambda body: (500, "", "stop"))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                ep.bodies.append(body)
            status, content, finish = ep.answer(body)
            if status == 200:
                data = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
            else:
                data = {"error": {"message": content or "refused"}}
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *a: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ep.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield ep
    finally:
        server.shutdown()
        server.server_close()


def record(domain: str, id: int, prompts: list[str], responses: list[str], system: str = "") -> dict[str, Any]:
    return {"task": domain, "id": id, "prompt": prompts, "response": responses, "current_prompt": prompts[-1],
            "system_str": system, "turn_idx": len(prompts), "total_turns": len(prompts)}


TOOL_CALL = '{"name": "get", "arguments": {}}'
RECORDS = {
    "terminal": [
        record("terminal", 1, ["ls", "cat a.txt"], [M + "a.txt\n$ ", M + "alpha\n$ "], system="SYS-T"),
        record("terminal", 2, ["echo hi"], [M + "hi\n$ "]),
        record("terminal", 3, ["pwd"], [M + "/root\n$ "]),
        record("terminal", 4, ["whoami"], [M + "root\n$ "]),
    ],
    "mcp": [record("mcp", 5, [TOOL_CALL], [M + '{"ok": true}'])],
}
# The world model's reply per evaluated action: right, cut by the token limit, empty, a refused call, wrong.
WM_REPLIES = {
    "cat a.txt": (200, "<think>r</think><predicted_observation>alpha\n$ </predicted_observation>", "stop"),
    "echo hi": (200, "<predicted_observation>hi", "length"),
    "pwd": (200, "", "stop"),
    "whoami": (400, "model refused the request", "stop"),
    TOOL_CALL: (200, '<predicted_observation>{"ok": false}</predicted_observation>', "stop"),
}
TEMPLATE = "STAND-IN TEMPLATE\n{context}\n{world_model_input}\n\n{predicted_observation}\n\n{ground_truth}\nSTAND-IN NOTE\n"


def verdict(score: int) -> str:
    body = {"strengths": "s", "weaknesses": "w", "scores": dict.fromkeys(["format", "factuality", "consistency", "realism", "quality"], score)}
    return f"analysis\n<final_evaluation>{json.dumps(body)}</final_evaluation>"


def answer(body: dict[str, Any]) -> tuple[int, str, str]:
    if body["model"] == "wm":
        return WM_REPLIES[body["messages"][-1]["content"]]
    # The judge: 5 for the right answer, 2 for anything else.
    return 200, verdict(5 if "```\nalpha\n$\n```\n\n**Ground" in body["messages"][-1]["content"] else 2), "stop"


def make_bench(tmp: Path) -> Path:
    bench = tmp / "bench"
    bench.mkdir()
    for domain, recs in RECORDS.items():
        (bench / f"{domain}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return bench


def make_release(tmp: Path) -> Path:
    """A stand-in of the published release's layout: prompts/<domain>/ and eval/lwm_eval_utils.py."""
    for domain in RECORDS:
        (tmp / "release" / "prompts" / domain).mkdir(parents=True)
        (tmp / "release" / "prompts" / domain / "judge_system_prompt.txt").write_text(f"STAND-IN {domain} judge rubric\n")
    (tmp / "release" / "eval").mkdir()
    # Read, never run: the import below would fail if it were executed.
    (tmp / "release" / "eval" / "lwm_eval_utils.py").write_text(
        f"import module_that_does_not_exist\n\nJUDGE_USER_PROMPT = {TEMPLATE!r}\n")
    return tmp / "release" / "prompts"


def test_published_request_judging_and_scores(endpoint: Endpoint, tmp_path: Path) -> None:
    endpoint.answer = answer
    bench, preds, judged = make_bench(tmp_path), tmp_path / "preds.jsonl", tmp_path / "judged.jsonl"
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(preds), "-b", f"openai:wm@{endpoint.url}",
                              "--opt", "max_retries=0", "-c", "1"])
    assert res.exit_code == 0, res.output
    infer = {b["messages"][-1]["content"]: b for b in endpoint.sent("wm")}
    assert len(infer) == 5
    # Only what the protocol fixes goes out: no top_p, no seed, no n.
    for body in infer.values():
        assert set(body) == {"model", "messages", "temperature", "max_tokens"}
        assert (body["temperature"], body["max_tokens"]) == (0.6, 32768)
    assert infer["cat a.txt"]["messages"] == [
        {"role": "system", "content": "SYS-T"}, {"role": "user", "content": "ls"},
        {"role": "assistant", "content": M + "a.txt\n$ "}, {"role": "user", "content": "cat a.txt"}]

    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(preds), "-o", str(judged), "-j", f"openai:judge@{endpoint.url}",
                              "--judge-prompts", str(make_release(tmp_path))], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "2 predictions left out" in " ".join(res.output.split())
    judge_bodies = endpoint.sent("judge")
    # The empty answer and the failed call never reach the judge; the cut one does, as cut.
    assert len(judge_bodies) == 3
    for body in judge_bodies:
        assert set(body) == {"model", "messages", "temperature", "max_tokens"}
        assert (body["temperature"], body["max_tokens"]) == (0.6, 32768)
    by_turn = {b["messages"][1]["content"].split("# Current Turn:\n\n")[1].split("\n")[0]: b["messages"] for b in judge_bodies}
    assert by_turn["cat a.txt"] == [
        {"role": "system", "content": "STAND-IN terminal judge rubric\n"},
        {"role": "user", "content": (
            "STAND-IN TEMPLATE\n# Context (Historical Interactions):\n\nls\n" + M + "a.txt\n$ \n\n\n# Current Turn:\n\ncat a.txt\n\n"
            "**World Model Output (Simulated):**\n```\nalpha\n$\n```\n\n**Ground Truth (Real Output):**\n```\nalpha\n$\n```\nSTAND-IN NOTE")},
    ]
    # No history, no system_str anywhere; the truncated text is judged as it was cut.
    assert by_turn["echo hi"][1]["content"] == (
        "STAND-IN TEMPLATE\n\n# Current Turn:\n\necho hi\n\n**World Model Output (Simulated):**\n```\nhi\n```\n\n"
        "**Ground Truth (Real Output):**\n```\nhi\n$\n```\nSTAND-IN NOTE")
    assert by_turn[TOOL_CALL][0]["content"] == "STAND-IN mcp judge rubric\n"

    res = runner.invoke(app, ["bench", "score", str(judged), "-o", str(tmp_path / "rep")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    [group] = json.loads((tmp_path / "rep" / "scores.json").read_text())["groups"]
    term, mcp, micro, macro = group["domains"]["terminal"], group["domains"]["mcp"], group["overall"], group["macro"]
    assert (term["valid"], term["failed"], term["missing_predictions"], term["failed_predictions"]) == (2, 0, 1, 1)
    assert term["statuses"]["truncated"] == 1
    assert term["total"]["score"] == pytest.approx(62.5) and mcp["total"]["score"] == pytest.approx(25.0)  # (5+2)/2, 2
    assert micro["total"]["score"] == pytest.approx(50.0) and micro["valid"] == 3  # (5+2+2)/3
    assert macro["total"]["score"] == pytest.approx(43.75) and macro["total"]["n"] == 2  # (3.5+2)/2
    protocol = group["protocol"]
    assert protocol["judge_request"].startswith("published:")
    assert protocol["world_model_settings"] == [{"backend": "openai", "model": "wm", "temperature": 0.6, "max_tokens": 32768}]
    [judge_settings] = protocol["judge_settings"]
    assert (judge_settings["temperature"], judge_settings["max_tokens"]) == (0.6, 32768) and "top_p" not in judge_settings
    [prompts] = protocol["judge_prompts"]
    assert prompts.startswith("published:mcp=file:") and ",terminal=file:" in prompts and ",user=" in prompts
    assert "macro overall" in protocol["aggregation"]
    text = " ".join(res.output.split())
    assert "overall: micro 50.00 (mean of 3 samples), macro 43.75 (mean of 2 domains)" in text
    assert "1 failed calls and 1 predictions with no answer (not judged); 1 truncated" in text
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| overall macro | " in md and "- judge request: published:" in md and "- world-model sampling: temperature=0.6 max_tokens=32768" in md


def test_sampling_sent_is_what_the_user_set(endpoint: Endpoint, tmp_path: Path) -> None:
    endpoint.answer = answer
    bench = make_bench(tmp_path)
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(tmp_path / "p.jsonl"), "-b", f"openai:wm@{endpoint.url}",
                              "--id", "1", "--seed", "7", "--temperature", "0.2"])
    assert res.exit_code == 0, res.output
    [body] = endpoint.sent("wm")
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "seed"}
    assert (body["seed"], body["temperature"]) == (7, 0.2)
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(tmp_path / "p.jsonl"), "-j", f"openai:judge@{endpoint.url}",
                              "--judge-prompts", str(make_release(tmp_path)), "--judge-temperature", "0.3"])
    assert res.exit_code == 0, res.output
    [body] = endpoint.sent("judge")
    assert set(body) == {"model", "messages", "temperature", "max_tokens"} and (body["temperature"], body["max_tokens"]) == (0.3, 32768)


async def _judge_twice(endpoint: Endpoint, tmp_path: Path, **kw: Any) -> list[dict[str, Any]]:
    """Judge one right answer with a judge whose first verdict does not parse."""
    replies = iter([(200, "no verdict here", "stop"), (200, verdict(4), "stop")])
    endpoint.answer = lambda body: next(replies)
    sample = next(s for s in load_bench_dir(make_bench(tmp_path)).samples if s.id == 1)
    backend = load_backend("openai", model="judge", base_url=endpoint.url, max_retries=0)
    async with WorldModel(backend) as wm:
        j = await LLMJudge(wm, **kw).score(sample, Prediction(text="x", observation="alpha\n$", status=Status.complete))
    assert j.ok and j.attempts == 2 and j.total == 4
    return endpoint.bodies


async def test_published_judge_asks_again_with_the_same_request(endpoint: Endpoint, tmp_path: Path) -> None:
    from agentworld.judge.prompt import load_judge_prompts

    first, second = await _judge_twice(endpoint, tmp_path, prompts=load_judge_prompts(make_release(tmp_path)))
    assert first == second and set(first) == {"model", "messages", "temperature", "max_tokens"}


async def test_agentworld_judge_request_and_its_retry(endpoint: Endpoint, tmp_path: Path) -> None:
    first, second = await _judge_twice(endpoint, tmp_path)
    # Ours: temperature 0 and 1024 tokens, nothing else; the retry changes seed and warms up.
    assert set(first) == {"model", "messages", "temperature", "max_tokens"} and (first["temperature"], first["max_tokens"]) == (0.0, 1024)
    assert (second["seed"], second["temperature"]) == (1, 0.7)
    user = first["messages"][1]["content"]
    assert "SYS-T" in user and "# Scoring Instructions" in user  # our message keeps the simulation context


async def test_a_left_out_verdict_is_redone_once_the_prediction_is_answered(tmp_path: Path) -> None:
    from agentworld.bench.judging import load_judgements, run_judging
    from agentworld.judge import RuleScorer
    from agentworld.records.prediction import PredictionRecord

    [sample] = [s for s in load_bench_dir(make_bench(tmp_path)).samples if s.id == 1]

    def rec(p: Prediction) -> PredictionRecord:
        return PredictionRecord(uid=sample.uid, domain=sample.domain, id=sample.id, turn_idx=sample.turn_idx, sample_index=0,
                                prediction=p.model_copy(update={"backend": "openai", "model": "wm"}))

    out = tmp_path / "judged.jsonl"
    first = await run_judging([RuleScorer()], [sample], [rec(Prediction(error="HTTP 500"))], out)
    assert (first.done, first.left_out, first.failed) == (1, 1, 0)
    # `bench infer --retry-failed` answered it since: judged now, without --rejudge.
    answered = rec(Prediction(text="alpha", observation="alpha\n$", status=Status.untagged))
    again = await run_judging([RuleScorer()], [sample], [answered], out)
    assert (again.done, again.left_out) == (1, 0)
    [verdict] = load_judgements(out).records.values()
    assert verdict.judgement.ok and verdict.observation == "alpha\n$"
    assert (await run_judging([RuleScorer()], [sample], [answered], out)).skipped == 1
