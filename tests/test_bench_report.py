import json

from test_bench_infer import make_bench
from typer.testing import CliRunner

from agentworld.cli import app

runner = CliRunner()


def test_cli_infer_judge_score_report(tmp_path):
    bench, src = make_bench(tmp_path, 5, turns=3)
    preds = tmp_path / "preds.jsonl"
    args = ["bench", "infer", str(bench), "-o", str(preds), "-b", "retrieval", "--opt", f"source={src}", "--limit", "6", "-c", "2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "6 samples predicted" in " ".join(res.output.split())
    res = runner.invoke(app, [*args[:-4], "--limit", "9"])  # resume: only the three new ones
    assert "3 samples predicted, 6 already there" in " ".join(res.output.split())
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(preds)])
    assert res.exit_code == 0, res.output
    judged = tmp_path / "preds.judged.jsonl"
    assert len(judged.read_text().splitlines()) == 9
    res = runner.invoke(app, ["bench", "score", str(judged), "-o", str(tmp_path / "rep"), "--price", "rules=1,1"], env={"COLUMNS": "220"})
    assert res.exit_code == 0, res.output
    assert "overall" in res.output and "deterministic proxies" in res.output
    scores = json.loads((tmp_path / "rep" / "scores.json").read_text())
    [group] = scores["groups"]
    assert group["judge"] == "rules" and group["overall"]["valid"] == 9
    # The retrieval backend indexed these very trajectories, so it answers with the truth.
    assert group["overall"]["total"]["score"] == 100.0
    for name in ("report.md", "report.html", "chart_1.png"):
        assert (tmp_path / "rep" / name).stat().st_size > 0


def test_cli_errors_are_clean(tmp_path):
    res = runner.invoke(app, ["bench", "infer", str(tmp_path / "nope"), "-o", str(tmp_path / "p.jsonl"), "-b", "retrieval"])
    assert res.exit_code == 2 and "Traceback" not in res.output and "hint" in res.output
    bench, src = make_bench(tmp_path, 1, turns=1)
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(tmp_path / "p.jsonl"), "-b", "retrieval", "--opt", "source"])
    assert res.exit_code == 2 and "KEY=VALUE" in res.output
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(tmp_path / "p.jsonl"), "-b", f"retrieval:{src}", "--domain", "web"])
    assert res.exit_code == 2 and "no samples selected" in res.output
    preds = tmp_path / "p.jsonl"
    # A predictions file belongs to one backend: resuming another one into it is refused.
    preds.write_text(json.dumps({"uid": "terminal/t0:1/1", "domain": "terminal", "id": "t0:1", "turn_idx": 1,
                                 "sample_index": 0, "prediction": {"backend": "smol", "text": "x"}}) + "\n")
    res = runner.invoke(app, ["bench", "infer", str(bench), "-o", str(preds), "-b", "retrieval", "--opt", f"source={src}"])
    assert res.exit_code == 2 and "'smol'" in res.output and "new --out" in res.output and "--overwrite" in res.output
    res = runner.invoke(app, ["bench", "judge", str(bench), "-p", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "bench infer" in res.output
    bad = tmp_path / "bad.judged.jsonl"
    bad.write_text("{oops\n")
    res = runner.invoke(app, ["bench", "score", str(bad)])
    assert res.exit_code == 2 and "bad.judged.jsonl:1" in res.output
