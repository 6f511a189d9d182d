"""Print calibration items sample by sample for a reviewer to label: the session so far
(earlier actions, the last observations), the action, the real observation, then each
prediction with its cid. Never prints rule scores (labels are written blind).

    python benchmarks/calibration/show.py --domain terminal [--source retrieval] [--max 1500]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentworld.records.bench import load_bench_dir

HERE = Path(__file__).parent


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n // 2] + f"\n[... {len(text) - n} chars ...]\n" + text[-n // 2 :]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=Path, default=HERE / "items.jsonl")
    ap.add_argument("--bench", type=Path, default=Path("benchmarks/calibration/samples"))
    ap.add_argument("--domain")
    ap.add_argument("--source", action="append", help="only these sources (prefix match)")
    ap.add_argument("--skip", type=Path, help="labels.jsonl: skip items already labelled")
    ap.add_argument("--max", type=int, default=1500)
    args = ap.parse_args()
    samples = {s.uid: s for s in load_bench_dir(args.bench).samples}
    done = set()
    if args.skip and args.skip.exists():
        done = {json.loads(x)["cid"] for x in args.skip.read_text().splitlines() if x.strip()}
    by_uid: dict[str, list[dict]] = {}
    for line in args.items.read_text().splitlines():
        it = json.loads(line)
        if args.domain and it["domain"] != args.domain or it["cid"] in done:
            continue
        if args.source and not any(it["source"].startswith(s) for s in args.source):
            continue
        by_uid.setdefault(it["uid"], []).append(it)
    for uid, items in by_uid.items():
        s = samples[uid]
        print(f"\n######## {uid}")
        for i, (a, o) in enumerate(s.history(), 1):
            print(f"--- turn {i} action: {clip(a, 300)}")
            if i >= len(s.history()) - 1:
                print(f"--- turn {i} observation:\n{clip(o, 600)}")
        print(f"=== ACTION: {clip(s.action, 600)}")
        print(f"=== TRUTH:\n{clip(s.ground_truth, args.max)}")
        for it in items:
            if it["source"] == "ground_truth":
                print(f"*** {it['cid']} ground_truth (= truth)")
                continue
            print(f"*** {it['cid']} {it['source']}:\n{clip(it['observation'], args.max)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
