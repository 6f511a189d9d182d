"""RL prompt pool: exactly one turn per trajectory (docs/design.md#training-pipeline).

Several turns of one trajectory share a prefix, and training on all of them collapsed
training in the published runs, so each trajectory contributes one turn. The turn is a
seeded draw, among the turns that have rule verifiers when ``prefer_verifiable`` and
there are any; candidates are tried in that seeded order until one fits the prompt
length cap. Each sample carries the prompt messages, the ground-truth observation,
its rule-verifier specs (JSON) and, for rubric judging, the benchmark record.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.data.chat import load_tokenizer
from agentworld.data.config import RLConfig
from agentworld.data.cpt import Progress, write_report
from agentworld.data.parquet import write_dataset
from agentworld.data.resume import ResumeLog
from agentworld.data.source import prepare
from agentworld.jsonl import dumps
from agentworld.judge.verifiers import derive_specs
from agentworld.prompts import NUM_VARIANTS, sample_messages, trajectory_system_prompt
from agentworld.records.select import make_sample
from agentworld.records.trajectory import Trajectory
from agentworld.seeding import keyed_rng


@dataclass
class RLReport:
    per_domain: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    """trajectories, samples, with_verifier, dropped_too_long, verifier kinds."""
    rows: int = 0
    prepared: dict[str, Any] = field(default_factory=dict)
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"per_domain": {d: dict(c) for d, c in sorted(self.per_domain.items())}, "rows": self.rows,
                "prepared": self.prepared, "output": self.output}


def prompt_tokens(tokenizer: Any, messages: list[dict[str, str]]) -> int:
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


def choose_turn(traj: Trajectory, config: RLConfig, tokenizer: Any) -> tuple[dict[str, Any] | None, str]:
    """The pool record of one trajectory, or None and why."""
    rng = keyed_rng(config.seed, "rl-turn", traj.id)
    order = list(range(1, len(traj.turns) + 1))
    rng.shuffle(order)
    specs = {k: derive_specs(traj, k) for k in order} if config.prefer_verifiable else {}
    if any(specs.values()):
        order = [k for k in order if specs[k]] + [k for k in order if not specs[k]]
    variant = rng.randrange(NUM_VARIANTS) if config.system_variants else 0
    system = trajectory_system_prompt(traj, variant=variant)
    for k in order:
        sample = make_sample(traj, k, system_str=system)
        messages = sample_messages(sample)
        n = prompt_tokens(tokenizer, messages)
        if n > config.max_prompt_tokens:
            continue
        verifiers = specs.get(k) if config.prefer_verifiable else derive_specs(traj, k)
        return {
            "prompt": messages,
            "ground_truth": traj.turns[k - 1].observation,
            "verifiers": json.dumps([v.model_dump() for v in verifiers or []]),
            "verifier_kinds": sorted({v.kind for v in verifiers or []}),
            "bench_sample": dumps(sample),
            "domain": traj.domain,
            "trajectory_id": traj.id,
            "turn_idx": k,
            "variant": variant,
            "prompt_tokens": n,
        }, "ok"
    return None, "too_long"


def build_rl(config: RLConfig, *, progress: Progress | None = None, restart: bool = False) -> RLReport:
    """Build the RL pool under ``config.output_dir``; resumable unless ``restart``."""
    out_dir = Path(config.output_dir)
    tick: Progress = progress or (lambda *_: None)
    prepared = prepare(config, out_dir)
    report = RLReport(prepared=prepared.summary())
    tokenizer = load_tokenizer(config.tokenizer)
    rows = []
    tick("choosing turns", 0, len(prepared.train))
    with ResumeLog(out_dir, "rl", config, restart=restart) as log:
        for traj in prepared.train:
            rec = log.done.get(traj.id)
            if rec is None:
                sample, why = choose_turn(traj, config, tokenizer)
                rec = log.add(traj.id, {"sample": sample, "why": why})
            counts = report.per_domain[traj.domain]
            counts["trajectories"] += 1
            if rec["sample"] is None:
                counts[f"dropped_{rec['why']}"] += 1
            else:
                row = rec["sample"]
                rows.append(row)
                counts["samples"] += 1
                counts["with_verifier"] += bool(row["verifier_kinds"])
                for kind in row["verifier_kinds"]:
                    counts[f"verifier_{kind}"] += 1
            tick("choosing turns", 1, None)
    report.rows = len(rows)
    report.output = str(write_dataset(out_dir, rows, config.output_format)[0])
    write_report(out_dir, config, report.to_dict())
    return report
