"""Score each record's own ground truth as the prediction with the offline rule scorer.

A world model that answers exactly what the environment printed must get 100 on every
domain and dimension. The stored response (marker line included) goes through the same
path as a model's output -- the prediction parser, the rule scorer, the score step --
once untagged, as published records carry it, and once inside the observation block.
Prints the 0-100 score per domain and input form; anything under 100 means the marker
or the parser leaks into judging.

    python benchmarks/ground_truth_scores.py                      # benchmarks/local
    python benchmarks/ground_truth_scores.py tests/fixtures/awbench
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentworld.bench.score import score_records
from agentworld.judge.rules import RuleScorer
from agentworld.parsing import parse_prediction
from agentworld.prompts import OBS_CLOSE, OBS_OPEN
from agentworld.records.bench import BenchSample, as_text, load_bench_dir
from agentworld.records.prediction import Prediction
from agentworld.records.verdict import JudgedRecord

FORMS = {
    "untagged": lambda raw: raw,
    "tagged": lambda raw: f"{OBS_OPEN}\n{raw}\n{OBS_CLOSE}",
}


def ground_truth_records(samples: list[BenchSample], form: str) -> list[JudgedRecord]:
    scorer = RuleScorer()
    out = []
    for s in samples:
        text = FORMS[form](as_text(s.response[s.turn_idx - 1]))
        parsed = parse_prediction(text)
        pred = Prediction(text=text, observation=parsed.observation, status=parsed.status, model=form)
        out.append(JudgedRecord(uid=s.uid, domain=s.domain, id=s.id, turn_idx=s.turn_idx, sample_index=0,
                                judge=scorer.name, judgement=scorer.score_sync(s, pred), model=form,
                                observation=pred.observation if pred.ok else None, prediction_status=str(pred.status)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", nargs="*", type=Path, default=[Path("benchmarks/local")])
    args = ap.parse_args()
    worst = 100.0
    for bench in args.bench:
        samples = load_bench_dir(bench, strict=True).samples
        for form in FORMS:
            t0 = time.perf_counter()
            [group] = score_records(ground_truth_records(samples, form)).groups
            took = time.perf_counter() - t0
            cells = "  ".join(f"{d} {b.total.score:6.2f} (n={b.valid})" for d, b in group.domains.items())
            print(f"{bench} [{form}] overall {group.overall.total.score:6.2f}  {cells}  ({len(samples)} records, {took:.1f}s)")
            worst = min([worst, *(b.total.score for b in group.domains.values())])
    return 0 if worst == 100.0 else 1


if __name__ == "__main__":
    sys.exit(main())
