import json

from test_trajectory import make_traj
from typer.testing import CliRunner

from agentworld.cli import app

runner = CliRunner()


def test_help_lists_command_groups():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for group in ("collect", "bench", "sim", "data", "train", "predict"):
        assert group in res.output


def test_convert_then_stats(tmp_path):
    src = tmp_path / "trajs.jsonl"
    lines = [make_traj(i, 7).model_dump_json() for i in range(3)]
    lines.append(make_traj(9, 2, domain="mcp").model_dump_json())
    src.write_text("\n".join(lines[:2] + ["{broken"] + lines[2:]) + "\n")
    res = runner.invoke(app, ["data", "convert", str(src), "--out", str(tmp_path / "bench")])
    assert res.exit_code == 0, res.output
    assert f"{src}:3" in res.output  # the bad line is named, the rest converted
    rows = [json.loads(line) for line in (tmp_path / "bench" / "terminal_test.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 5
    # Records we write store responses as the published set does.
    assert all(r.startswith("**Environment Observation:**\n") for row in rows for r in row["response"])
    assert (tmp_path / "bench" / "mcp_test.jsonl").exists()
    res = runner.invoke(app, ["data", "stats", str(tmp_path / "bench")], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "terminal" in res.output and "15" in res.output
    res = runner.invoke(app, ["data", "stats", str(src)], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "trajectories" in res.output


def test_convert_strict_fails_cleanly(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text("{broken\n")
    res = runner.invoke(app, ["data", "convert", str(src), "--out", str(tmp_path), "--strict"])
    assert res.exit_code == 2
    assert "t.jsonl:1" in res.output and "Traceback" not in res.output
