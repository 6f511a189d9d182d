"""Agreement of the offline rule scorer with the reviewer's labels on the calibration set.

Scores every item of ``benchmarks/calibration/items.jsonl`` with the rule scorer and
prints Spearman's rank correlation with the labels in ``labels.jsonl``, per dimension
and for the total, on the dev half, the test half and both, overall and per domain.
Goal: >= 0.85 on the total and >= 0.5 on every dimension.

    python benchmarks/scorer_agreement.py                 # dev, test, all
    python benchmarks/scorer_agreement.py --split dev     # only the half tuned on
    python benchmarks/scorer_agreement.py --worst 10      # the largest disagreements (dev)
    python benchmarks/scorer_agreement.py --round 4       # only the items round 4 added (--round old: rounds 1-3)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from agentworld.judge.rules import score_observation
from agentworld.records.bench import load_bench_dir
from agentworld.records.verdict import DIMENSIONS

HERE = Path(__file__).parent / "calibration"
COLUMNS = (*DIMENSIONS, "total")
NO_ATTEMPT = {"constructed:empty", "constructed:action_copy", "constructed:self_praise"}


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sx = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rho (scipy when installed); nan when either side is constant."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    try:
        from scipy.stats import spearmanr
    except ImportError:
        ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
        return float(np.corrcoef(ra, rb)[0, 1])
    return float(spearmanr(a, b).statistic)


def load(items_path: Path, labels_path: Path, bench: Path) -> list[dict]:
    samples = {s.uid: s for s in load_bench_dir(bench, strict=True).samples}
    labels = {}
    for line in labels_path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            labels[rec["cid"]] = rec
    rows = []
    for line in items_path.read_text().splitlines():
        it = json.loads(line)
        if it["cid"] not in labels:
            continue
        scores, _ = score_observation(samples[it["uid"]], it["observation"])
        rule = {**scores, "total": sum(scores.values()) / len(scores)}
        rows.append({**it, "label": labels[it["cid"]], "rule": rule})
    return rows


def rule_scores(items_path: Path, bench: Path) -> list[dict]:
    """``{"cid", **scores}`` for every item, labelled or not, in file order."""
    samples = {s.uid: s for s in load_bench_dir(bench, strict=True).samples}
    out = []
    for line in items_path.read_text().splitlines():
        it = json.loads(line)
        scores, _ = score_observation(samples[it["uid"]], it["observation"])
        out.append({"cid": it["cid"], **scores})
    return out


def write_scores(items_path: Path, bench: Path, out: Path) -> None:
    out.write_text("".join(json.dumps(r) + "\n" for r in rule_scores(items_path, bench)))


def table(rows: list[dict], title: str) -> None:
    groups = {"all": rows}
    for r in rows:
        groups.setdefault(r["domain"], []).append(r)
    print(f"\n{title}")
    print(f"  {'group':<10}{'n':>5}" + "".join(f"{c:>13}" for c in COLUMNS))
    for name, rs in groups.items():
        cells = [spearman([r["label"][c] for r in rs], [r["rule"][c] for r in rs]) for c in COLUMNS]
        print(f"  {name:<10}{len(rs):>5}" + "".join(f"{v:>13.2f}" for v in cells))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=Path, default=HERE / "items.jsonl")
    ap.add_argument("--labels", type=Path, default=HERE / "labels.jsonl")
    ap.add_argument("--bench", type=Path, default=Path("benchmarks/calibration/samples"))
    ap.add_argument("--split", choices=("dev", "test", "all"), action="append")
    ap.add_argument("--round", help="only items of this round: a number (4 on) or 'old' for rounds 1-3")
    ap.add_argument("--worst", type=int, default=0, help="list the N largest |label - rule| gaps on dev")
    ap.add_argument("--write-scores", type=Path, help="also write every item's rule scores here (rule_scores.jsonl)")
    args = ap.parse_args()
    if args.write_scores:
        write_scores(args.items, args.bench, args.write_scores)
    rows = load(args.items, args.labels, args.bench)
    if args.round:
        # Rounds 1-3 stamped no round on their items.
        rows = [r for r in rows if str(r.get("round", "old")) == args.round]
    splits = args.split or ["dev", "test", "all"]
    print(f"{len(rows)} labelled items ({sum(r['split'] == 'dev' for r in rows)} dev, "
          f"{sum(r['split'] == 'test' for r in rows)} test); Spearman rule scorer vs labels")
    for split in splits:
        table([r for r in rows if split == "all" or r["split"] == split], f"[{split}]")
    # The ground truth (all 5) and the no-attempt variants (all 1) make agreement easy;
    # without them the figures say how well the scorer ranks real, imperfect answers.
    hard = [r for r in rows if r["source"] != "ground_truth" and r["source"] not in NO_ATTEMPT]
    print(f"\nwithout ground truth and no-attempt items ({', '.join(sorted(NO_ATTEMPT))}):")
    for split in splits:
        table([r for r in hard if split == "all" or r["split"] == split], f"[{split}, hard]")
    if args.worst:
        dev = [r for r in rows if r["split"] == "dev"]
        gaps = sorted(dev, key=lambda r: -sum(abs(r["label"][d] - r["rule"][d]) for d in DIMENSIONS))
        for r in gaps[: args.worst]:
            lab = " ".join(str(r["label"][d]) for d in DIMENSIONS)
            rul = " ".join(str(r["rule"][d]) for d in DIMENSIONS)
            print(f"  {r['cid']} {r['uid']} {r['source']}: label {lab} rule {rul}  ({r['label'].get('note', '')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
