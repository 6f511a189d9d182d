"""Fault specs and schedules: a misspelt key is an error naming file:line, and unseeded
sessions draw (and report) their own seed, so they do not share one fault schedule."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sim_fixtures import call

from agentworld.sim import PerturbationSpec, Scenario, SimEnv
from agentworld.sim.loading import InputError, load_scenario


def test_a_misspelt_rule_key_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    spec = tmp_path / "faults.yaml"
    spec.write_text("name: flaky\nrules:\n  - kind: api_error\n    probablity: 0.5\n")
    with pytest.raises(InputError, match=r"faults\.yaml:4: .*rules\.0\.probablity: unknown key"):
        PerturbationSpec.load(spec)
    spec.write_text("name: flaky\nsed: 3\nrules: []\n")
    with pytest.raises(InputError, match=r"faults\.yaml:2: .*sed: unknown key"):
        PerturbationSpec.load(spec)


def test_scenario_errors_name_the_line_too(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("domain: terminal\ntask: t\nmax_turns: many\n")
    with pytest.raises(InputError, match=r"s\.yaml:3: .*max_turns"):
        load_scenario(path)


def test_the_shipped_specs_still_load() -> None:
    for path in sorted((Path(__file__).resolve().parents[1] / "configs" / "perturbations").glob("*.yaml")):
        assert PerturbationSpec.load(path).rules, path


def test_unseeded_sessions_draw_and_report_their_own_seed(mcp_wm) -> None:
    spec = PerturbationSpec(seed=1, rules=[{"kind": "api_error", "probability": 0.5}])
    action = call("list_items")
    seeds, schedules = [], set()
    for _ in range(8):
        env = SimEnv(mcp_wm, Scenario(domain="mcp", task="t"), perturbations=spec)
        info = env.reset().info
        seeds.append(info["seed"])
        assert env.record().provenance.seed == info["seed"]
        fired: dict[int, int] = {}
        schedules.add(tuple(bool(spec.plan(session_seed=info["seed"], turn=t, action=action, fired=fired))
                            for t in range(1, 13)))
    assert len(set(seeds)) == 8 and len(schedules) > 1
    # A given seed is kept: the same schedule again.
    env = SimEnv(mcp_wm, Scenario(domain="mcp", task="t"), perturbations=spec)
    assert env.reset(seed=seeds[0]).info["seed"] == seeds[0]
