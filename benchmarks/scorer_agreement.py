"""Agreement of the offline rule scorer with the labellers of the calibration set.

Scores every item of ``benchmarks/calibration/items.jsonl`` with the rule scorer and
prints Spearman's rank correlation with each labeller, per dimension and for the total:
the reviewers' labels (``labels.jsonl``, both halves) and, where it is present, the
second, independent labeller of the dev half (``shared/calibration/second_labels.jsonl``),
on the dev half, the test half and both, on all items and on the hard ones (neither the
truth, nor a copy of it, nor a no-attempt answer), overall and per domain. Constructed
near-misses (``constructed:near_*``, labelled from the rubric, see the calibration
README) are counted in and, on a line of their own, left out.
Goal (issue 26): dev half vs the second labeller, hard items, total >= 0.85 and every
dimension >= 0.7, next to the same figures of the test half.

    python benchmarks/scorer_agreement.py                 # the headline, then dev, test, all
    python benchmarks/scorer_agreement.py --split dev     # only the half tuned on
    python benchmarks/scorer_agreement.py --worst 10      # the largest disagreements (dev)
    python benchmarks/scorer_agreement.py --worst 10 --labeller second
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
SECOND = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "second_labels.jsonl"
COLUMNS = (*DIMENSIONS, "total")
NO_ATTEMPT = {"constructed:empty", "constructed:action_copy", "constructed:self_praise"}
NEAR_MISS = "constructed:near_"
"""Sources of the constructed near-misses of good answers (labelled from the rubric)."""


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


def read_labels(path: Path) -> dict[str, dict]:
    """``cid -> label record`` of a labels file, with ``total`` the mean of the five
    dimensions where the file does not state it; {} when the file is absent."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            rec.setdefault("total", sum(rec[d] for d in DIMENSIONS) / len(DIMENSIONS))
            out[rec["cid"]] = rec
    return out


def load(items_path: Path, labels_path: Path, bench: Path, second_path: Path | None = None) -> list[dict]:
    """Labelled items with their rule scores: ``label`` (the reviewers'), ``second``
    (the second labeller's, None where it did not label the item), ``truth`` (the real
    observation) and ``rule``."""
    samples = {s.uid: s for s in load_bench_dir(bench, strict=True).samples}
    labels = read_labels(labels_path)
    second = read_labels(second_path) if second_path is not None else {}
    rows = []
    for line in items_path.read_text().splitlines():
        it = json.loads(line)
        if it["cid"] not in labels:
            continue
        sample = samples[it["uid"]]
        scores, _ = score_observation(sample, it["observation"])
        rule = {**scores, "total": sum(scores.values()) / len(scores)}
        rows.append({**it, "label": labels[it["cid"]], "second": second.get(it["cid"]), "rule": rule,
                     "truth": sample.ground_truth})
    return rows


def is_hard(row: dict) -> bool:
    """Neither the truth, nor a byte copy of it, nor a no-attempt answer: the items where
    ranking takes reading (the easy ones score 5 or 1 on every side)."""
    return (row["source"] != "ground_truth" and row["source"] not in NO_ATTEMPT
            and row["observation"] != row["truth"])


def rho(rows: list[dict], labeller: str = "label") -> dict[str, float]:
    """Spearman per column between ``labeller``'s labels and the rule scores."""
    rows = [r for r in rows if r.get(labeller) is not None]
    return {c: spearman([r[labeller][c] for r in rows], [r["rule"][c] for r in rows]) for c in COLUMNS}


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


def _cells(values: dict[str, float]) -> str:
    return "".join(f"{values[c]:>13.2f}" for c in COLUMNS)


def table(rows: list[dict], title: str, labeller: str = "label") -> None:
    rows = [r for r in rows if r.get(labeller) is not None]
    if not rows:
        return
    groups = {"all": rows}
    for r in rows:
        groups.setdefault(r["domain"], []).append(r)
    print(f"\n{title}")
    print(f"  {'group':<10}{'n':>5}" + "".join(f"{c:>13}" for c in COLUMNS))
    for name, rs in groups.items():
        print(f"  {name:<10}{len(rs):>5}" + _cells(rho(rs, labeller)))
    plain = [r for r in rows if not r["source"].startswith(NEAR_MISS)]
    if len(plain) < len(rows):
        print(f"  {'w/o near':<10}{len(plain):>5}" + _cells(rho(plain, labeller)))


def headline(rows: list[dict]) -> None:
    """The issue-26 figures side by side: dev vs the second labeller and vs the
    reviewers, test vs the reviewers (the only labels of the test half), hard items."""
    hard = [r for r in rows if is_hard(r)]
    lines = [("dev, second labeller", [r for r in hard if r["split"] == "dev"], "second"),
             ("dev, reviewers", [r for r in hard if r["split"] == "dev"], "label"),
             ("test, reviewers", [r for r in hard if r["split"] == "test"], "label")]
    print("\nhard items (goal: dev vs second labeller total >= 0.85, every dimension >= 0.7)")
    print(f"  {'half, labeller':<24}{'n':>5}" + "".join(f"{c:>13}" for c in COLUMNS))
    for name, rs, who in lines:
        for tag, part in (("", rs), (" w/o near", [r for r in rs if not r["source"].startswith(NEAR_MISS)])):
            part = [r for r in part if r.get(who) is not None]
            if part and (not tag or len(part) < len([r for r in rs if r.get(who) is not None])):
                print(f"  {name + tag:<24}{len(part):>5}" + _cells(rho(part, who)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=Path, default=HERE / "items.jsonl")
    ap.add_argument("--labels", type=Path, default=HERE / "labels.jsonl")
    ap.add_argument("--second", type=Path, default=SECOND, help="the second labeller's labels (dev half)")
    ap.add_argument("--bench", type=Path, default=Path("benchmarks/calibration/samples"))
    ap.add_argument("--split", choices=("dev", "test", "all"), action="append")
    ap.add_argument("--round", help="only items of this round: a number (4 on) or 'old' for rounds 1-3")
    ap.add_argument("--worst", type=int, default=0, help="list the N largest |label - rule| gaps on dev")
    ap.add_argument("--labeller", choices=("label", "second"), default="label", help="whose labels --worst compares")
    ap.add_argument("--write-scores", type=Path, help="also write every item's rule scores here (rule_scores.jsonl)")
    args = ap.parse_args()
    if args.write_scores:
        write_scores(args.items, args.bench, args.write_scores)
    rows = load(args.items, args.labels, args.bench, args.second)
    if args.round:
        # Rounds 1-3 stamped no round on their items.
        rows = [r for r in rows if str(r.get("round", "old")) == args.round]
    splits = args.split or ["dev", "test", "all"]
    n_second = sum(r["second"] is not None for r in rows)
    print(f"{len(rows)} labelled items ({sum(r['split'] == 'dev' for r in rows)} dev, "
          f"{sum(r['split'] == 'test' for r in rows)} test; {sum(r['source'].startswith(NEAR_MISS) for r in rows)} "
          f"constructed near-misses); {n_second} with second labels; Spearman rule scorer vs labels")
    headline(rows)
    hard = [r for r in rows if is_hard(r)]
    for who, name in (("label", "reviewers"), ("second", "second labeller")):
        for split in splits:
            part = [r for r in rows if split == "all" or r["split"] == split]
            if split == "all" and all(r[who] is None for r in rows if r["split"] != "dev") and "dev" in splits:
                continue  # the second labeller labelled dev items only: "all" is the dev table again
            table(part, f"[{split}, all, vs {name}]", who)
            table([r for r in part if r in hard], f"[{split}, hard, vs {name}]", who)
    if args.worst:
        dev = [r for r in rows if r["split"] == "dev" and r.get(args.labeller) is not None]
        gaps = sorted(dev, key=lambda r: -sum(abs(r[args.labeller][d] - r["rule"][d]) for d in DIMENSIONS))
        for r in gaps[: args.worst]:
            lab = " ".join(str(r[args.labeller][d]) for d in DIMENSIONS)
            rul = " ".join(str(r["rule"][d]) for d in DIMENSIONS)
            print(f"  {r['cid']} {r['uid']} {r['source']}: label {lab} rule {rul}  ({r[args.labeller].get('note', '')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
