"""World-model quality on the held-out local benchmark: every model side by side.

Runs each model over the same held-out samples (``bench infer``), scores them with the
offline rule scorer (``bench judge -j rules``) and, when an endpoint is configured, with
an LLM judge too; then prints per-domain totals and per-dimension scores as Markdown
tables (0-100, the published scale), plus the Spearman agreement between judge and rules.

Default models: the base SmolLM2 (no adapter), the shipped tuned adapter, the tuned model
with demonstrations in context, and the retrieval floor over the train split. Add stage
adapters with ``--model cpt=smol:runs/train/cpt/adapter`` and so on.

    python benchmarks/world_model_quality.py --limit 10
    python benchmarks/world_model_quality.py --sample 8 --seed 0 --model tuned=smol,engine=llamacpp --model retrieval=retrieval:runs/world_model_quality/train_index.jsonl
    python benchmarks/world_model_quality.py --limit 10 --judge openai:qwen3-32b@http://localhost:8000/v1

Everything goes to ``--out`` (default runs/world_model_quality/) and is resumable: a
rerun only computes what is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from agentworld.bench.report import fmt
from agentworld.records.verdict import DIMENSIONS


def default_models(index: Path) -> list[str]:
    return [
        "base=smol,packaged=false",
        "tuned=smol",
        "tuned+demos=smol,demos=2",
        f"retrieval=retrieval:{index}",
    ]


def run(cmd: list[str]) -> None:
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def score_model(name: str, spec: str, args: argparse.Namespace, out: Path) -> dict:
    preds = out / f"{name}.jsonl"
    judged = out / f"{name}.judged.jsonl"
    infer = ["agentworld", "bench", "infer", str(args.bench), "-o", str(preds), "-b", spec, *selection(args)]
    if not spec.startswith("retrieval"):
        infer += ["--max-tokens", str(args.max_tokens), "-c", str(args.concurrency),
                  "--temperature", str(args.temperature)]
    run(infer)
    judge = ["agentworld", "bench", "judge", str(args.bench), "-p", str(preds), "-o", str(judged), "-j", "rules"]
    if args.judge:
        judge += ["-j", args.judge]
    run(judge)
    run(["agentworld", "bench", "score", str(judged), "-o", str(out / f"{name}.report")])
    return json.loads((out / f"{name}.report" / "scores.json").read_text())


def selection(args: argparse.Namespace) -> list[str]:
    """The samples every model answers: a seeded random subset per domain, or the first N."""
    if args.sample:
        return ["--sample", str(args.sample), "--seed", str(args.seed)]
    return ["--limit", str(args.limit)]


def cell(c: dict | None) -> str:
    """A score cell of scores.json (0-100), or ``-`` when the model has none there."""
    return fmt((c or {}).get("score"))


def tables(results: dict[str, dict]) -> str:
    judges = sorted({g["judge"] for r in results.values() for g in r["groups"]})
    domains = sorted({d for r in results.values() for g in r["groups"] for d in g["domains"]})
    lines = []
    for judge in judges:
        lines += [f"\n### Total by domain ({judge})\n", "| model | " + " | ".join([*domains, "overall"]) + " |"]
        lines.append("|---" * (len(domains) + 2) + "|")
        for name, rep in results.items():
            for g in rep["groups"]:
                if g["judge"] == judge:
                    cells = [cell(g["domains"].get(d, {}).get("total")) for d in domains]
                    lines.append(f"| {name} | " + " | ".join([*cells, cell(g["overall"]["total"])]) + " |")
        lines += [f"\n### Dimensions, all domains ({judge})\n", "| model | " + " | ".join(DIMENSIONS) + " |"]
        lines.append("|---" * (len(DIMENSIONS) + 1) + "|")
        for name, rep in results.items():
            for g in rep["groups"]:
                if g["judge"] == judge:
                    dims = g["overall"]["dimensions"]
                    lines.append(f"| {name} | " + " | ".join(cell(dims.get(d)) for d in DIMENSIONS) + " |")
    agreement = [(n, a) for n, r in results.items() for a in r.get("agreement", [])]
    if agreement:
        lines += ["\n### Judge vs rules (Spearman on sample totals)\n", "| model | judges | n | rho |", "|---|---|---|---|"]
        for name, a in agreement:
            rho = "-" if a["spearman"] is None else f"{a['spearman']:.2f}"
            lines.append(f"| {name} | {a['judge_a']} vs {a['judge_b']} | {a['n']} | {rho} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=Path("benchmarks/local"))
    ap.add_argument("--trajectories", type=Path, default=Path("benchmarks/local/trajectories"))
    ap.add_argument("--out", type=Path, default=Path("runs/world_model_quality"))
    ap.add_argument("--limit", type=int, default=10, help="the first N samples per domain")
    ap.add_argument("--sample", type=int, default=0, help="a seeded random N samples per domain instead of the first N")
    ap.add_argument("--seed", type=int, default=0, help="seed of --sample")
    ap.add_argument("--temperature", type=float, default=0.0, help="sampling temperature of the models (0: greedy)")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--model", action="append", default=[], help="NAME=SPEC (repeatable); replaces the defaults")
    ap.add_argument("--judge", default=os.environ.get("AGENTWORLD_JUDGE"), help="LLM judge spec (optional)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = args.out / "train_index.jsonl"
    if not index.exists():
        run(["agentworld", "data", "split", str(args.trajectories), "--split", "train", "--exclude-bench", str(args.bench), "-o", str(index)])
    results = {}
    for item in args.model or default_models(index):
        name, _, spec = item.partition("=")
        if not spec:
            sys.exit(f"--model {item!r}: write NAME=SPEC, e.g. tuned=smol")
        results[name] = score_model(name, spec, args, args.out)
    which = f"{args.sample} seeded samples (seed {args.seed})" if args.sample else f"the first {args.limit} samples"
    print(f"\n## World-model quality: {args.bench}, {which} per domain (0-100)")
    print(tables(results))


if __name__ == "__main__":
    main()
