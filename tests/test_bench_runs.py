"""Trustworthy evaluation runs: settings checked on resume, one writer per output file,
bad bytes reported as file:line, cache modes, cached tokens not counted as spent, and
messages that survive a pipe. Real CLI processes, real servers on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_bench_infer import make_bench, serve
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.records.bench import load_bench_dir

runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def infer_args(bench: Path, out: Path, src: Path, *extra: str) -> list[str]:
    return ["bench", "infer", str(bench), "-o", str(out), "-b", "retrieval", "--opt", f"source={src}", "-c", "2", *extra]


def test_resume_with_other_settings_is_refused(tmp_path):
    bench, src = make_bench(tmp_path, 3, turns=2)
    preds = tmp_path / "preds.jsonl"
    res = runner.invoke(app, infer_args(bench, preds, src, "--temperature", "0.0", "--limit", "3"))
    assert res.exit_code == 0, res.output
    stored = json.loads(preds.read_text().splitlines()[0])["settings"]
    assert stored["backend"] == "retrieval" and stored["temperature"] == 0.0 and stored["max_tokens"] == 1024
    before = preds.read_text()
    res = runner.invoke(app, infer_args(bench, preds, src, "--temperature", "0.7"))
    out = flat(res.output)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "temperature: 0.0 in the file, 0.7 now" in out and "new --out" in out and "--overwrite" in out
    assert preds.read_text() == before  # nothing appended
    # Same settings resume; --overwrite starts afresh with the new ones.
    res = runner.invoke(app, infer_args(bench, preds, src, "--temperature", "0.0"))
    assert res.exit_code == 0 and "3 samples predicted, 3 already there" in flat(res.output)
    res = runner.invoke(app, infer_args(bench, preds, src, "--temperature", "0.7", "--overwrite"))
    assert res.exit_code == 0 and "6 samples predicted, 0 already there" in flat(res.output)
    assert {json.loads(line)["settings"]["temperature"] for line in preds.read_text().splitlines()} == {0.7}


def test_published_defaults_for_served_models_only(tmp_path):
    from agentworld.bench.infer import PUBLISHED_DEFAULTS, run_settings
    from agentworld.models import GenerationConfig, WorldModel, load_backend

    assert (PUBLISHED_DEFAULTS.temperature, PUBLISHED_DEFAULTS.max_tokens) == (0.6, 32768)
    served = WorldModel(load_backend("openai", model="m", base_url="http://127.0.0.1:9/v1"), defaults=PUBLISHED_DEFAULTS)
    body = served.backend.request([{"role": "user", "content": "x"}], served.settings(GenerationConfig(seed=0)))
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.6, 32768, 0)
    # What nobody set stays out, so the server's own defaults for the model apply.
    body = served.backend.request([{"role": "user", "content": "x"}], served.settings(GenerationConfig()))
    assert "top_p" not in body and "seed" not in body and "top_k" not in body
    flags = run_settings(served, GenerationConfig(temperature=0.2, max_tokens=512))
    assert (flags["temperature"], flags["max_tokens"], flags["model"]) == (0.2, 512, "m")
    res = runner.invoke(app, ["bench", "infer", "--help"], env={"COLUMNS": "300"})
    assert "0.6 for openai" in flat(res.output) and "32768 for openai" in flat(res.output)


def test_non_utf8_bytes_are_reported_as_file_line(tmp_path):
    bench, src = make_bench(tmp_path, 2, turns=2)
    data = bench / "terminal_test.jsonl"
    lines = data.read_bytes().splitlines(keepends=True)
    data.write_bytes(lines[0] + lines[1][:20] + b"\xff\xfe" + lines[1][20:] + b"".join(lines[2:]))
    res = runner.invoke(app, ["data", "stats", str(bench)])
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert f"{data}:2: not UTF-8" in flat(res.output) and "terminal" in res.output
    preds = tmp_path / "preds.jsonl"
    res = runner.invoke(app, infer_args(bench, preds, src))
    assert res.exit_code == 0 and f"{data}:2:" in flat(res.output) and "3 samples predicted" in flat(res.output)
    raw = preds.read_bytes().splitlines(keepends=True)
    preds.write_bytes(raw[0] + b'{"uid": "\xc3\x28"}\n' + b"".join(raw[1:]))
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(preds)])
    assert res.exit_code == 0, res.output
    assert f"{preds}:2: not UTF-8" in flat(res.output) and "3 verdicts" in flat(res.output)
    assert f"{data}:2: not UTF-8" in flat(res.output)  # the benchmark's bad line is named here too


def test_cache_modes_and_cached_tokens_are_not_spent(tmp_path):
    bench, src = make_bench(tmp_path, 2, turns=2)
    cache = tmp_path / "cache.sqlite"
    res = runner.invoke(app, infer_args(bench, tmp_path / "a.jsonl", src, "--cache", str(cache), "--limit", "2"))
    assert res.exit_code == 0 and "from the cache" not in res.output
    res = runner.invoke(app, infer_args(bench, tmp_path / "b.jsonl", src, "--cache", str(cache), "--cache-mode", "replay", "--limit", "2"))
    assert res.exit_code == 0, res.output
    assert "0 prompt + 0 completion tokens spent; 2 predictions from the cache" in flat(res.output)
    assert all(json.loads(x)["prediction"]["cached"] for x in (tmp_path / "b.jsonl").read_text().splitlines())
    # Strict replay never calls the backend: a sample the cache lacks is a clean error.
    res = runner.invoke(app, infer_args(bench, tmp_path / "c.jsonl", src, "--cache", str(cache), "--cache-mode", "replay"))
    assert res.exit_code == 2 and "no cached response" in flat(res.output) and "Traceback" not in res.output
    res = runner.invoke(app, infer_args(bench, tmp_path / "d.jsonl", src, "--cache", str(cache), "--cache-mode", "off", "--limit", "2"))
    assert res.exit_code == 0 and "from the cache" not in res.output
    res = runner.invoke(app, infer_args(bench, tmp_path / "e.jsonl", src, "--cache-mode", "replay"))
    assert res.exit_code == 2 and "needs --cache" in res.output
    # A judge replaying a cache that lacks its verdicts stops cleanly; it records no failures.
    judged = tmp_path / "a.judged.jsonl"
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(tmp_path / "a.jsonl"), "-o", str(judged),
                              "-j", "openai:judge@http://127.0.0.1:9/v1", "--cache", str(cache), "--cache-mode", "replay"])
    assert res.exit_code == 2 and "no cached response" in flat(res.output) and "Traceback" not in res.output
    assert not judged.exists() or judged.read_text() == ""


async def test_cached_predictions_report_stored_tokens_apart(tmp_path):
    from agentworld.bench.infer import run_infer
    from agentworld.models import ResponseCache, WorldModel, load_backend
    from agentworld.models.tiny import build_tiny_checkpoint

    bench, _ = make_bench(tmp_path, 2, turns=2)
    samples = load_bench_dir(bench).samples
    ckpt = build_tiny_checkpoint(tmp_path / "tiny")
    cache = tmp_path / "cache.sqlite"
    live = WorldModel(load_backend("hf", path=ckpt), cache=ResponseCache(cache))
    first = await run_infer(live, samples, tmp_path / "a.jsonl", config=None)
    await live.aclose()
    spent = first.prompt_tokens + first.completion_tokens
    assert spent > 0 and first.cached == 0
    replay = WorldModel(load_backend("hf", path=ckpt), cache=ResponseCache(cache, "replay"))
    again = await run_infer(replay, samples, tmp_path / "b.jsonl")
    await replay.aclose()
    assert (again.prompt_tokens, again.completion_tokens) == (0, 0)
    assert again.cached == len(samples) and again.cached_tokens == spent


def _wait_for(pred, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_second_run_on_one_output_fails_fast(tmp_path):
    bench, src = make_bench(tmp_path, 4, turns=4)
    total = len(load_bench_dir(bench).samples)
    out = tmp_path / "preds.jsonl"
    with serve(src, "--delay", "0.4", "--served-model-name", "wm") as url:
        cmd = [sys.executable, "-m", "agentworld", "bench", "infer", str(bench), "-o", str(out), "-b", "openai",
               "--opt", f"base_url={url}", "--opt", "model=wm", "-c", "1"]
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(lambda: out.exists() and out.read_text().count("\n") >= 1)
            second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            assert first.poll() is None, "the first run must still be writing"
            assert second.returncode == 2 and "Traceback" not in second.stderr
            assert "being written by another run" in flat(second.stderr) and f"pid {first.pid}" in second.stderr
            _, err = first.communicate(timeout=120)
            assert first.returncode == 0, err
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    keys = [(r["uid"], r["sample_index"]) for r in map(json.loads, out.read_text().splitlines())]
    assert len(keys) == len(set(keys)) == total
    # The lock died with its holder: a rerun goes through and finds everything done.
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(out), "-b", "openai", "--opt", f"base_url={url}", "--opt", "model=wm"])
    assert res.exit_code == 0 and f"0 samples predicted, {total} already there" in flat(res.output)


def test_judge_refuses_a_verdict_file_another_process_writes(tmp_path):
    bench, src = make_bench(tmp_path, 1, turns=2)
    preds = tmp_path / "preds.jsonl"
    assert runner.invoke(app, infer_args(bench, preds, src)).exit_code == 0
    judged = tmp_path / "preds.judged.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom agentworld.jsonl import run_lock\nwith run_lock(sys.argv[1]):\n"
         "    print('held', flush=True)\n    time.sleep(60)", str(judged)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        res = subprocess.run([sys.executable, "-m", "agentworld", "bench", "judge", str(bench), "-p", str(preds)],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 2 and "being written by another run" in flat(res.stderr) and "Traceback" not in res.stderr
        assert not judged.exists() or judged.read_text() == ""
    finally:
        holder.kill()
        holder.wait()
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(preds)])
    assert res.exit_code == 0 and "2 verdicts" in flat(res.output)


def test_file_line_messages_do_not_wrap_in_a_pipe(tmp_path):
    deep = tmp_path / ("a-rather-long-directory-name-" * 4) / ("and-another-one-" * 4)
    deep.mkdir(parents=True)
    bad = deep / "trajectories_with_a_long_name.jsonl"
    bad.write_text('{"id": "t", "domain": "terminal", "turns": []}\n{oops [not json]\n')
    res = subprocess.run([sys.executable, "-m", "agentworld", "data", "stats", str(bad)],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    assert len(str(bad)) > 200
    [line] = [x for x in res.stderr.splitlines() if "skipped" in x]
    assert line == f"skipped {bad}:2: invalid JSON (Expecting property name enclosed in double quotes at column 2)"


def test_start_up_imports_no_ml_stack(tmp_path):
    """`agentworld --help` and `bench infer` with the openai backend stay clear of torch & co."""
    bench, _ = make_bench(tmp_path, 1, turns=1)
    probe = (
        "import sys\nfrom agentworld.cli import main\nsys.argv = ['agentworld', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = {'torch', 'transformers', 'trl', 'peft', 'datasets'}\n"
        "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & heavy), file=sys.stderr)\n"
    )
    runs = [
        ["--help"],
        ["bench", "infer", str(bench), "-o", str(tmp_path / "p.jsonl"), "-b", "openai",
         "--opt", "base_url=http://127.0.0.1:9/v1", "--opt", "model=m", "--opt", "max_retries=0"],
    ]
    for args in runs:
        res = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120)
        assert "HEAVY []" in res.stderr, (args, res.stderr[-2000:])
    # The openai run really went through the backend (and failed to connect, as arranged).
    assert "1 failed calls" in flat(subprocess.run(
        [sys.executable, "-c", probe, *runs[1], "--retry-failed"], capture_output=True, text=True, timeout=120).stdout)


@pytest.mark.slow
def test_two_judges_with_one_model_on_two_endpoints_stay_apart(tmp_path):
    from test_judge_llm import predictions_for, transcript_store

    bench, _ = make_bench(tmp_path, 14, turns=1)
    samples, preds = predictions_for(bench)
    store = tmp_path / "judge_transcripts.jsonl"
    transcript_store(store, samples, preds)
    pred_file = tmp_path / "preds.jsonl"
    pred_file.write_text("".join(p.model_dump_json() + "\n" for p in preds))
    judged = tmp_path / "preds.judged.jsonl"
    with serve(store, "--opt", "domain=terminal") as url_a, serve(store, "--opt", "domain=terminal") as url_b:
        judge = ["bench", "judge", str(bench), "-p", str(pred_file), "-j", f"openai:judge@{url_a}", "-j", f"openai:judge@{url_b}",
                 "--judge-max-tokens", "256", "--retries", "1"]
        res = runner.invoke(app, judge)
        assert res.exit_code == 0, res.output
        recs = [json.loads(x) for x in judged.read_text().splitlines()]
        assert {r["judge"] for r in recs} == {f"openai:judge@{url_a}", f"openai:judge@{url_b}"}
        assert len(recs) == 2 * len(preds)
        assert {r["judge_settings"]["max_tokens"] for r in recs} == {256}
        # Other judge settings on resume are refused, naming the setting.
        res = runner.invoke(app, [*judge, "--judge-temperature", "0.3"])
        assert res.exit_code == 2 and "temperature: 0.0 in the file, 0.3 now" in flat(res.output)
        # Labels name judges explicitly.
        labelled = tmp_path / "labelled.jsonl"
        res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(pred_file), "-o", str(labelled),
                                  "-j", f"A=openai:judge@{url_a}", "-j", f"B=openai@{url_b},model=judge,max_retries=1"])
        assert res.exit_code == 0, res.output
        assert {json.loads(x)["judge"] for x in labelled.read_text().splitlines()} == {"A", "B"}
    res = runner.invoke(app, ["bench", "score", str(judged)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    first, second = sorted([f"openai:judge@{url_a}", f"openai:judge@{url_b}"])
    assert f"agreement wm:m: {first} vs {second}: Spearman 1.000 over" in flat(res.output)
