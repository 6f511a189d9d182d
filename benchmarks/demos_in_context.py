"""Demonstrations in context (``demos=K``): rule score and prompt-token cost per K.

For each K, predicts a seeded held-out slice of the local benchmark with the given
backend plus ``demos=K`` (``agentworld bench infer``, resumable), judges it with the
offline rule scorer (``agentworld bench judge -j rules``), then prints per K the 0-100
rule score on the samples every K finished, the mean prompt and completion tokens and
the mean latency. The demonstrations come from the train side of
``benchmarks/local/trajectories`` (the default ``demo_source``).

    # the measurement in the README (embedded model, terminal slice; ~2-4 min a sample
    # on a shared 2-core CPU, so run it in the background):
    nice python benchmarks/demos_in_context.py --ks 0,2,4 -d terminal --sample 10 --max-tokens 128
    # print the figures of runs already made (no new predictions):
    python benchmarks/demos_in_context.py --ks 0,2,4 --report-only
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from agentworld.bench.infer import load_predictions
from agentworld.bench.judging import load_judgements
from agentworld.bench.score import score_records

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str]) -> None:
    print("$ agentworld " + " ".join(args), flush=True)
    subprocess.run(["agentworld", *args], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=ROOT / "benchmarks" / "local")
    ap.add_argument("--backend", default="smol", help="Backend spec without demos (default: smol).")
    ap.add_argument("--ks", default="0,2,4", help="Comma-separated K values.")
    ap.add_argument("-d", "--domain", action="append", help="Domains (repeatable; default: all).")
    ap.add_argument("--sample", type=int, default=10, help="Seeded samples per domain.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("-c", "--concurrency", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "demos_in_context")
    ap.add_argument("--report-only", action="store_true", help="Only print figures of finished runs.")
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    domains = [a for d in args.domain or [] for a in ("-d", d)]
    for k in ks:
        preds, judged = args.out / f"k{k}.jsonl", args.out / f"k{k}.judged.jsonl"
        if not args.report_only:
            _run(["bench", "infer", str(args.bench), "-o", str(preds), "-b", f"{args.backend},demos={k}", *domains,
                  "--sample", str(args.sample), "--seed", str(args.seed), "--max-tokens", str(args.max_tokens),
                  "-c", str(args.concurrency)])
        if preds.exists():
            _run(["bench", "judge", str(args.bench), "-p", str(preds), "-o", str(judged), "-j", "rules"])

    loaded = {k: load_judgements(args.out / f"k{k}.judged.jsonl").records for k in ks}
    common = set.intersection(*({r.uid for r in recs.values()} for recs in loaded.values())) if loaded else set()
    print(f"\n{len(common)} samples finished under every K ({', '.join(map(str, ks))})")
    print(f"{'K':>3} {'rule score':>10} {'prompt tok':>10} {'+tok vs K0':>10} {'compl tok':>9} {'latency s':>9}")
    base_prompt = None
    for k in ks:
        recs = [r for r in loaded[k].values() if r.uid in common]
        preds = [r.prediction for r in load_predictions(args.out / f"k{k}.jsonl").records.values() if r.uid in common]
        if not recs:
            print(f"{k:>3} {'-':>10}")
            continue
        [group] = score_records(recs).groups
        prompt = statistics.mean(p.prompt_tokens or 0 for p in preds)
        base_prompt = prompt if base_prompt is None else base_prompt
        completion = statistics.mean(p.completion_tokens or 0 for p in preds)
        latency = statistics.mean(p.latency_s or 0 for p in preds)
        print(f"{k:>3} {group.overall.total.score:>10.2f} {prompt:>10.0f} {prompt - base_prompt:>+10.0f} "
              f"{completion:>9.0f} {latency:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
