import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_bench_infer import killed_part_way, make_bench, serve

from agentworld.bench.judging import load_judgements, run_judging
from agentworld.judge import DIMENSIONS, RuleScorer
from agentworld.judge.llm import LEFT_OUT, LLMJudge, judgement_from_data
from agentworld.judge.prompt import judge_messages
from agentworld.models import WorldModel, load_backend
from agentworld.parsing import Status
from agentworld.records.bench import load_bench_dir
from agentworld.records.prediction import Prediction, PredictionRecord
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories


def verdict(scores, **extra):
    body = {"content_type": "deterministic", "strengths": "exact echo", "weaknesses": "", "scores": dict(zip(DIMENSIONS, scores, strict=True)), **extra}
    return f"The echo matches.\n<final_evaluation>\n{json.dumps(body)}\n</final_evaluation>"


# What the judge endpoint answers, by kind; None = the verdict fails after every retry.
REPLIES = {
    "valid": (verdict([5, 4, 5, 3, 4]), [5, 4, 5, 3, 4]),
    "repairable": ("<final_evaluation>\n```json\n{'scores': {'format': 2, 'factuality': 3, 'consistency': 4, "
                   "'realism': 2, 'quality': 1,},}\n```\n</final_evaluation>", [2, 3, 4, 2, 1]),
    "partly_invalid": (verdict([4, 9, "x", 4, 4]), [4, 5, 0, 4, 4]),
    "no_block": ("I think this prediction deserves a 5 overall.", None),
    "broken_json": ("<final_evaluation>{scores: format=5 factuality=4</final_evaluation>", None),
    "truncated": ("<final_evaluation>\n{\"scores\": {\"format\": 5,", None),
    "out_of_range": (verdict([0, 7, 6, -1, 10]), [1, 5, 5, 1, 5]),
    "no_json": ("Every dimension deserves a 5.", None),
}


def predictions_for(bench: Path) -> tuple[list, list[PredictionRecord]]:
    samples = load_bench_dir(bench).samples
    preds = []
    for i, s in enumerate(samples):
        # Alternate right and wrong predictions; the reasoning must never reach the judge.
        obs = s.ground_truth if i % 2 == 0 else s.ground_truth.replace("echo", "printf")
        p = Prediction(text=f"<think>SECRET-{i}</think><predicted_observation>{obs}</predicted_observation>",
                       observation=obs, reasoning=f"SECRET-{i}", status=Status.complete, backend="wm", model="m")
        preds.append(PredictionRecord(uid=s.uid, domain=s.domain, id=s.id, turn_idx=s.turn_idx, sample_index=0, prediction=p))
    return samples, preds


def transcript_store(path: Path, samples, preds) -> dict[str, str]:
    """Judge transcripts indexed by the judge's own request text; kinds cycle over REPLIES."""
    kinds = list(REPLIES)
    chosen, trajs = {}, []
    for i, (s, r) in enumerate(zip(samples, preds, strict=True)):
        kind = kinds[i % len(kinds)]
        request = judge_messages(s, r.prediction.observation)[-1]["content"]
        assert "SECRET" not in request
        trajs.append(Trajectory(id=f"judge-{i}", domain="terminal", turns=[Turn(action=request, observation=REPLIES[kind][0])]))
        chosen[s.uid] = kind
    write_trajectories(path, trajs)
    return chosen


def test_judgement_from_flat_and_nested_data():
    flat = judgement_from_data("j", {"Format": 5, "factuality": "4", "consistency": 3, "realism": 2, "quality": 1}, "raw")
    assert flat.scores == dict(zip(DIMENSIONS, [5, 4, 3, 2, 1], strict=True)) and flat.total == 3.0
    nested = judgement_from_data("j", {"scores": {"format": 5}, "strengths": ["a", "b"]}, "raw")
    assert nested.scores["format"] == 5 and nested.strengths == "a; b" and nested.total == 5.0


@pytest.mark.slow
async def test_llm_judge_against_local_endpoint_with_malformed_outputs(tmp_path):
    bench, _ = make_bench(tmp_path, 21, turns=1)
    samples, preds = predictions_for(bench)
    store = tmp_path / "judge_transcripts.jsonl"
    kinds = transcript_store(store, samples, preds)
    # Unparsable verdicts are retried, transient 429/503s retried by the client; neither stops the run.
    with serve(store, "--opt", "domain=terminal", "--fail-rate", "0.2") as url:
        backend = load_backend("openai", model="judge", base_url=url, max_retries=8, backoff_s=0.01, backoff_max_s=0.05)
        llm = LLMJudge(WorldModel(backend, concurrency=4), retries=1)
        out = tmp_path / "judged.jsonl"
        res = await run_judging([llm, RuleScorer()], samples, preds, out, concurrency=4)
        await llm.aclose()
    assert res.done == 2 * len(preds) and res.missing_samples == 0
    recs = load_judgements(out).records
    assert len(recs) == 2 * len(preds)
    for s in samples:
        j = recs[(s.uid, 0, llm.name, "wm:m")].judgement
        expected = REPLIES[kinds[s.uid]][1]
        if expected is None:
            assert not j.ok and j.error and j.attempts == 2, (kinds[s.uid], j)
        else:
            assert j.ok and [j.scores[d] for d in DIMENSIONS] == expected, (kinds[s.uid], j)
            assert "SECRET" not in j.raw
        assert recs[(s.uid, 0, "rules", "wm:m")].judgement.ok
    failed = sum(1 for k in kinds.values() if REPLIES[k][1] is None)
    assert res.failed == failed > 0


def test_invalid_prediction_is_not_sent_to_the_judge(awbench_dir):
    s = load_bench_dir(awbench_dir).samples[0]

    class Unreachable:
        name = "nowhere"
        model_id = "none"

        async def complete(self, *a):  # pragma: no cover - must not be called
            raise AssertionError("judge called for an invalid prediction")

        async def aclose(self):
            pass

    judge = LLMJudge(WorldModel(Unreachable()), name="x")
    import asyncio

    # Nothing to judge: left out and said so, never scored 1 (the published script skips them).
    for pred, why in [(Prediction(text="", status=Status.missing), "missing"),
                      (Prediction(error="HTTP 500: down", status=Status.missing), "failed"),
                      (Prediction(text="<think>still thinking", status=Status.missing), "missing")]:
        j = asyncio.run(judge.score(s, pred))
        assert not j.ok and j.details[LEFT_OUT] == why and j.scores == dict.fromkeys(DIMENSIONS, 0)


@pytest.mark.slow
def test_kill9_during_judge_then_resume(tmp_path):
    bench, _ = make_bench(tmp_path, 400, turns=1)
    samples, preds = predictions_for(bench)
    pred_path = tmp_path / "preds.jsonl"
    pred_path.write_text("".join(r.model_dump_json() + "\n" for r in preds))
    store = tmp_path / "judge_transcripts.jsonl"
    transcript_store(store, samples, preds)
    out = tmp_path / "judged.jsonl"
    with serve(store, "--opt", "domain=terminal") as url:
        judge = f"openai:judge@{url},max_retries=2,backoff_s=0.01"
        cmd = [sys.executable, "-m", "agentworld", "bench", "judge", str(bench), "-p", str(pred_path), "-o", str(out),
               "-j", judge, "-j", "rules", "-c", "2", "--retries", "1"]
        before = killed_part_way(cmd, out)
        assert 40 <= before.count(b"\n") < 2 * len(preds), "the run must be killed part way"
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
    after = out.read_bytes()
    assert after.startswith(before[: before.rfind(b"\n") + 1])
    keys = [(r["uid"], r["sample_index"], r["judge"]) for r in map(json.loads, after.decode().splitlines())]
    assert len(keys) == len(set(keys)) == 2 * len(preds)
    assert {k[2] for k in keys} == {"rules", "openai:judge"}


def test_make_scorer_builds_the_judge_a_config_names() -> None:
    from agentworld.judge import make_scorer

    assert isinstance(make_scorer("rules", "openai", {}), RuleScorer)
    judge = make_scorer("llm", "openai:judge@http://127.0.0.1:9/v1", {"max_retries": 0})
    assert isinstance(judge, LLMJudge)
    with pytest.raises(ValueError, match="unknown judge 'gpt': expected 'rules' or 'llm'"):
        make_scorer("gpt", "openai", {}, what="judge")
