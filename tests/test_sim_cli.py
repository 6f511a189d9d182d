"""``agentworld sim run`` records an episode that ``agentworld sim replay`` reproduces from the cache."""

from __future__ import annotations

import json
from pathlib import Path

from test_sim_fixtures import ks, terminal_trajectories
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.records.trajectory import read_trajectories, write_trajectories

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "perturbations"


def test_run_then_strict_replay(tmp_path: Path):
    source = tmp_path / "terminal.jsonl"
    write_trajectories(source, terminal_trajectories())
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([json.loads(ks(c)) for c in ("echo hello > notes.txt\n", "cat notes.txt\n", "pwd\n")]))
    runner = CliRunner()
    backend = ["-b", "retrieval:" + str(source)]
    res = runner.invoke(app, ["sim", "run", str(actions), "--scenario", str(_scenario(tmp_path)), *backend,
                              "-p", str(CONFIGS / "flaky-api.yaml"), "--seed", "4", "--cache", str(tmp_path / "c.sqlite"),
                              "-o", str(tmp_path / "sim.jsonl")])
    assert res.exit_code == 0, res.output
    [traj] = read_trajectories(tmp_path / "sim.jsonl", strict=True).items
    assert traj.num_turns == 3 and traj.provenance.seed == 4 and traj.sim_perturbations["name"] == "flaky-api"
    ok = runner.invoke(app, ["sim", "replay", str(tmp_path / "sim.jsonl"), "--cache", str(tmp_path / "c.sqlite"), *backend])
    assert ok.exit_code == 0 and "replayed 3 turn(s) exactly" in ok.output
    # Another cache holds only the first call: strict replay refuses instead of calling the model.
    first = tmp_path / "first.json"
    first.write_text(json.dumps(json.loads(actions.read_text())[:1]))
    runner.invoke(app, ["sim", "run", str(first), "--scenario", str(_scenario(tmp_path)), *backend,
                        "--cache", str(tmp_path / "other.sqlite"), "-o", str(tmp_path / "other.jsonl")])
    bad = runner.invoke(app, ["sim", "replay", str(tmp_path / "sim.jsonl"), "--cache", str(tmp_path / "other.sqlite"), *backend])
    assert bad.exit_code == 2 and "rw mode" in bad.output


def test_clear_errors_for_bad_inputs(tmp_path: Path):
    runner = CliRunner()
    missing = runner.invoke(app, ["sim", "serve", "-b", "retrieval:" + str(tmp_path), "--scenario", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "scenario file not found" in missing.output
    (tmp_path / "p.yaml").write_text("rules: [{kind: explode}]\n")
    (tmp_path / "s.yaml").write_text("domain: terminal\n")
    bad = runner.invoke(app, ["sim", "serve", "-b", "retrieval:" + str(tmp_path), "--scenario", str(tmp_path / "s.yaml"),
                              "-p", str(tmp_path / "p.yaml")])
    assert bad.exit_code == 2 and "p.yaml" in bad.output
    none = runner.invoke(app, ["sim", "mcp", "-b", "retrieval:" + str(tmp_path)])
    assert none.exit_code == 2 and "no scenario given" in none.output


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text("domain: terminal\ntask: Keep notes\nfirst_observation: 'root@sandbox:/workspace# '\n")
    return path
