"""Time the leakage check of `data build` on the recorded local trajectories, and print what it finds.

Prints how long shingling and comparing take for train vs everything held out (the
recorded test side plus the local benchmark's evaluated turns), the leaks (near-duplicates,
training trajectories that copy held-out turns), how many held-out turns occur in training
at all, and per domain how alike the held-out templates are to the training ones: each
held-out template's most similar training template (Jaccard of their pooled shingles, and
the highest trajectory pair), the pairs flagged at the check's threshold, and how many
held-out trajectories reach a shingle Jaccard of 0.5 with some training trajectory.

    PYTHONPATH=src python3 benchmarks/leakage_check.py
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path

from agentworld.data.source import load_inputs
from agentworld.data.split import bench_trajectories, check_leakage, near_duplicate_pairs, shingles

ROOT = Path(__file__).parents[1]
ALIKE = 0.5
"""Trajectory-level Jaccard counted per domain (a figure, not a rule)."""


def main() -> None:
    trajs, _ = load_inputs([str(ROOT / "benchmarks/local/trajectories")])
    t0 = time.perf_counter()
    bench = bench_trajectories([ROOT / "benchmarks/local"])
    t1 = time.perf_counter()
    train = [t for t in trajs if t.provenance.split != "test" and t.id not in bench]
    held = [t for t in trajs if t not in train] + list(bench.values())
    report = check_leakage(train, held)
    t2 = time.perf_counter()
    print(f"trajectories: {len(train)} train, {len(held)} held out ({len(bench)} rebuilt from benchmark samples)")
    print(f"loading benchmark samples: {t1 - t0:.2f} s")
    print(f"check_leakage: {t2 - t1:.2f} s, {len(report.near_duplicates)} leaking pair(s) "
          f"({len(report.turn_copies)} copying held-out turns), leakage {'ok' if report.ok else 'FOUND'}")
    for test_id, train_id, score in report.near_duplicates[:10]:
        print(f"  leak: {test_id} ~ {train_id} ({score:.2f})")
    print(f"held-out turns also in training: {report.shared_turns} of {report.test_turns}")

    # Trajectory level: held-out (recorded) trajectories with a training one at ALIKE or more.
    recorded = [t for t in held if t.id not in bench or t.provenance.task]
    sets = [shingles(t) for t in train] + [shingles(t) for t in recorded]
    alike: dict[str, set[str]] = defaultdict(set)
    for _, j, _ in near_duplicate_pairs(sets, ALIKE, boundary=len(train)):
        alike[recorded[j - len(train)].domain].add(recorded[j - len(train)].id)
    per_domain = Counter(t.domain for t in recorded)
    by_domain = defaultdict(list)
    for m in report.templates:
        by_domain[m.domain].append(m)
    print(f"template similarity (flagged at {report.similar_templates_at}):")
    for domain in sorted(by_domain):
        matches = by_domain[domain]
        top = matches[0]
        flagged = [m for m in matches if m.jaccard >= report.similar_templates_at]
        print(f"  {domain}: {len(matches)} held-out templates, nearest {top.held_out} ~ {top.train} "
              f"(templates {top.jaccard:.2f}, best trajectory pair {top.max_pair:.2f}); "
              f"{len(flagged)} flagged; {len(alike[domain])} of {per_domain[domain]} held-out trajectories "
              f"at >= {ALIKE} with a training one")
        for m in flagged:
            print(f"    flagged: {m.held_out} ~ {m.train} ({m.jaccard:.2f}, pair {m.max_pair:.2f})")


if __name__ == "__main__":
    main()
