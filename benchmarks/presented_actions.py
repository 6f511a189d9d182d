"""The retrieval floor and the rule scorer on the local benchmark, bare vs presented actions.

Published AgentWorldBench user turns frame each action in markdown (``### Turn N``,
``**Action:**``, a fenced block); the local records hold bare actions. This asks the
retrieval floor (indexed on the train side of the recorded split, as
``benchmarks/retrieval_floor.py`` does) every held-out sample of ``benchmarks/local``
twice -- once as recorded, once with every user turn presented as published records
present it (:meth:`BenchSample.with_presented_actions`) -- and scores each answer with the
rule scorer against its own form of the record (0-100 per domain, as ``agentworld bench
score`` reports). Columns:

- ``bare``: bare requests, scored on the bare records;
- ``presented``: presented requests, scored on the presented records;
- ``scorer only``: the bare answers scored on the presented records (the scorer's share
  of any difference; the floor's share is ``presented`` minus this);
- ``answers differ``: samples whose two answers are not the same text.

When everything reads actions through ``agentworld.domains.presented`` the two forms are
one record, so ``bare == presented == scorer only`` and no answer differs.

    python benchmarks/presented_actions.py [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agentworld.bench.score import score_records
from agentworld.data.split import select_split
from agentworld.judge.rules import RuleScorer
from agentworld.models import load_backend
from agentworld.prompts import sample_messages
from agentworld.records.bench import BenchSample, load_bench_dir
from agentworld.records.trajectory import write_trajectories
from agentworld.records.verdict import JudgedRecord

ROOT = Path(__file__).resolve().parents[1]

# A rule-judged record of one answer, made as the floor benchmark makes it (run from benchmarks/).
from retrieval_floor import _record  # noqa: E402


def _domain_scores(records: list[JudgedRecord]) -> tuple[float, dict[str, float]]:
    [group] = score_records(records).groups
    return group.overall.total.score, {d: b.total.score for d, b in group.domains.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=ROOT / "benchmarks" / "local")
    ap.add_argument("--trajectories", type=Path, default=ROOT / "benchmarks" / "local" / "trajectories")
    ap.add_argument("--limit", type=int, default=0, help="At most this many samples per domain (0: all).")
    args = ap.parse_args()
    samples = load_bench_dir(args.bench, strict=True).samples
    if args.limit:
        kept: dict[str, list[BenchSample]] = defaultdict(list)
        for s in samples:
            if len(kept[s.domain]) < args.limit:
                kept[s.domain].append(s)
        samples = [s for group in kept.values() for s in group]
    scorer = RuleScorer()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        train = Path(tmp) / "train.jsonl"
        sel = select_split([args.trajectories], split="train", exclude_bench=args.bench)
        write_trajectories(train, sel.trajectories)
        floor = load_backend("retrieval", source=train)
        rows: dict[str, list[JudgedRecord]] = {"bare": [], "presented": [], "scorer only": []}
        differ: dict[str, int] = defaultdict(int)
        for s in samples:
            shown = s.with_presented_actions()
            [bare_text] = floor.answers(sample_messages(s), 1, s.domain)
            [shown_text] = floor.answers(sample_messages(shown), 1, s.domain)
            differ[s.domain] += bare_text != shown_text
            rows["bare"].append(_record(s, bare_text, "bare", scorer))
            rows["presented"].append(_record(shown, shown_text, "presented", scorer))
            rows["scorer only"].append(_record(shown, bare_text, "scorer only", scorer))
    print(f"index: {len(sel.trajectories)} train-split trajectories; {len(samples)} held-out samples "
          f"[{time.perf_counter() - t0:.0f}s]")
    scores = {name: _domain_scores(records) for name, records in rows.items()}
    domains = list(scores["bare"][1])
    print(f"{'domain':<10}" + "".join(f"{name:>13}" for name in rows) + f"{'answers differ':>16}")
    for d in domains:
        n = sum(s.domain == d for s in samples)
        print(f"{d:<10}" + "".join(f"{scores[name][1][d]:13.2f}" for name in rows) + f"{differ[d]:>10} / {n}")
    print(f"{'overall':<10}" + "".join(f"{scores[name][0]:13.2f}" for name in rows)
          + f"{sum(differ.values()):>10} / {len(samples)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
