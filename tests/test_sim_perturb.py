"""Perturbation specs: seeded decisions, filters, mechanical rewrites, YAML files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sim_fixtures import call, ks, result, screen

from agentworld.sim.perturb import Injection, PerturbationSpec, apply_mechanical, paginate

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "perturbations"


def _plan(spec: PerturbationSpec, seed: int, turns: int, action: str = call("list_items")) -> list[list[str]]:
    fired: dict[int, int] = {}
    return [[i.kind for i in spec.plan(session_seed=seed, turn=t, action=action, fired=fired)] for t in range(1, turns + 1)]


def test_decisions_are_seeded_and_follow_the_probability():
    spec = PerturbationSpec(seed=7, rules=[{"kind": "api_error", "probability": 0.2}])
    assert _plan(spec, 1, 50) == _plan(spec, 1, 50)
    assert _plan(spec, 1, 50) != _plan(spec, 2, 50)
    hits = sum(bool(k) for k in _plan(spec, 3, 2000))
    assert 300 < hits < 500  # 20% of 2000, with room for chance


def test_explicit_turns_targets_and_max_times():
    spec = PerturbationSpec(rules=[
        {"kind": "timeout", "turns": [2, 4]},
        {"kind": "pagination", "mode": "mechanical", "probability": 1.0, "targets": ["list_*"]},
        {"kind": "rate_limit", "probability": 1.0, "max_times": 2},
    ])
    plan = _plan(spec, 0, 4, call("list_items"))
    assert plan == [["pagination", "rate_limit"], ["timeout", "pagination", "rate_limit"], ["pagination"], ["timeout", "pagination"]]
    assert _plan(spec, 0, 1, call("read_file", path="x"))[0] == ["rate_limit"]
    assert _plan(spec, 0, 1, ks("pip install x\n"))[0] == ["rate_limit"]


def test_semantic_rules_word_an_instruction_naming_the_target():
    spec = PerturbationSpec(rules=[{"kind": "disk_full", "turns": [1]}])
    [inj] = spec.plan(session_seed=0, turn=1, action=ks("pip install requests\n"), fired={})
    assert inj.mode == "semantic" and inj.target == "pip" and "No space left on device" in inj.detail


def _inj(kind: str, target: str = "list_items") -> Injection:
    return Injection(rule=0, kind=kind, mode="mechanical", turn=1, target=target, detail="")


def test_mechanical_errors_take_each_domains_shape():
    mcp = json.loads(apply_mechanical("mcp", result("fine"), _inj("api_error"), {"status": 502, "message": "Bad Gateway"}))
    assert mcp["isError"] is True and "502 Bad Gateway" in mcp["content"][0]["text"]
    term = apply_mechanical("terminal", screen("curl x", "partial"), _inj("timeout", "curl"), {"seconds": 5})
    assert term.endswith("partial") and "root@sandbox" not in term.splitlines()[-1]
    assert "429" in apply_mechanical("search", "[1] https://a\nTitle: a", _inj("rate_limit"), {"retry_after": 3})


def test_pagination_of_json_mcp_search_and_lines():
    items = [{"id": i} for i in range(10)]
    assert json.loads(paginate(json.dumps(items), 3)) == items[:3]
    wrapped = json.loads(paginate(result(json.dumps(items)), 4))
    assert json.loads(wrapped["content"][0]["text"]) == items[:4]
    keyed = json.loads(paginate(json.dumps({"results": items, "total": 10}), 2))
    assert keyed["results"] == items[:2] and keyed["has_more"] is True
    hits = "\n\n".join(f"[{i}] https://x/{i}\nTitle: t{i}\nSnippet: s\nDate: 2024-01-01" for i in range(1, 6))
    paged = paginate(hits, 2)
    assert "[2] https://x/2" in paged and "[3]" not in paged and "3 more result(s)" in paged
    assert paginate("a\nb", 5) == "a\nb"


def test_every_shipped_config_loads():
    files = sorted(CONFIGS.glob("*.yaml"))
    assert len(files) >= 3
    for f in files:
        assert PerturbationSpec.load(f).rules


def test_bad_specs_fail_with_the_file_named(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [{kind: disk_full, mode: mechanical}]\n")
    with pytest.raises(ValueError, match="(?s)bad.yaml.*no mechanical form"):
        PerturbationSpec.load(bad)
    bad.write_text("rules: [{kind: custom}]\n")
    with pytest.raises(ValueError, match="params.instruction"):
        PerturbationSpec.load(bad)
    bad.write_text("rules: [unclosed\n")
    with pytest.raises(ValueError, match="bad.yaml: not valid YAML"):
        PerturbationSpec.load(bad)
    with pytest.raises(ValueError, match="perturbation spec file not found: .*none.yaml"):
        PerturbationSpec.load(tmp_path / "none.yaml")
