"""Behaviour pins for the domain knowledge that moved into ``agentworld.domains``.

Over every sample of the local benchmark (real recorded sessions in four domains) this
records what the consumers of a domain's knowledge answer: the rule scorer's scores and
details, the ledger's state and conflicts, the rule verifiers' specs, the perturbation
target and the mechanical timeout rewrite, the error/rejection verdicts of the filters.
The figures were written before the move (``python tests/test_domain_pins.py --write``)
and must stay the same after it; a difference names the samples it touches.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from agentworld.data.filters import is_error, is_rejected
from agentworld.judge.rules import score_observation
from agentworld.judge.verifiers import derive_specs
from agentworld.records.bench import BenchSample, load_bench_dir
from agentworld.records.trajectory import Trajectory, Turn
from agentworld.sim.ledger import LedgerState, ledger_for
from agentworld.sim.perturb import Injection, action_target, apply_mechanical

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "fixtures" / "domain_pins.json"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _pins(sample: BenchSample, other: str) -> dict[str, str]:
    truth = sample.ground_truth
    scores = [score_observation(sample, pred) for pred in (truth, other)]
    state = LedgerState()
    rules = ledger_for(sample.domain)
    for action, obs in sample.history():
        rules.update(state, action, obs)
    conflicts = [[c.model_dump() for c in rules.check(state, sample.action, pred)] for pred in (truth, other)]
    rules.update(state, sample.action, truth)
    turns = [Turn(action=a, observation=o) for a, o in [*sample.history(), (sample.action, truth)]]
    traj = Trajectory(id="p", domain=sample.domain, turns=turns)
    specs = [s.model_dump() for s in derive_specs(traj, len(turns))]
    timeout = Injection(rule=0, kind="timeout", mode="mechanical", turn=1, target="x", detail="")
    api = Injection(rule=0, kind="api_error", mode="mechanical", turn=1, target="x", detail="")
    perturbed = [
        apply_mechanical(sample.domain, truth, timeout, {"seconds": 30}),
        apply_mechanical(sample.domain, truth, api, {"status": 503, "message": "Service Unavailable"}),
    ]
    return {
        "rules": _digest(scores),
        "ledger": _digest([state.model_dump(), conflicts]),
        "verifiers": _digest(specs),
        "perturb": _digest([action_target(sample.action), perturbed]),
        "filters": _digest([is_error(truth), is_rejected(truth)]),
    }


def snapshot() -> dict[str, dict[str, str]]:
    bench = load_bench_dir(ROOT / "benchmarks" / "local")
    out: dict[str, dict[str, str]] = {}
    samples = bench.samples
    for i, sample in enumerate(samples):
        other = samples[i - 1].ground_truth  # a wrong answer from a neighbouring turn
        out[sample.uid] = _pins(sample, other)
    return out


def test_domain_knowledge_consumers_answer_as_before() -> None:
    pinned = json.loads(GOLDEN.read_text())
    now = snapshot()
    assert now.keys() == pinned.keys()
    changed: dict[str, list[str]] = {}
    for uid, values in now.items():
        for part, digest in values.items():
            if pinned[uid][part] != digest:
                changed.setdefault(part, []).append(uid)
    assert not changed, {k: (len(v), v[:5]) for k, v in changed.items()}


if __name__ == "__main__" and "--write" in sys.argv:
    GOLDEN.write_text(json.dumps(snapshot(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
