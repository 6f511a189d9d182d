"""Assemble the calibration items: predictions for benchmarks/local samples from real
sources (ground truth, retrieval baseline, the embedded model tuned and base) plus
constructed degraded variants. Writes ``items.jsonl`` (no scores: labels live in
``labels.jsonl``, written by a reviewer; see README.md).

    python benchmarks/calibration/build.py --pred retrieval=/tmp/cal/retrieval.jsonl \
        --pred smol=/tmp/cal/smol.jsonl --pred base=/tmp/cal/base.jsonl [--round 4]

Items are append-only: an existing ``--out`` file is kept as it is (its items are
labelled) and only (sample, source) pairs it lacks are added. Constructed variants are
deterministic: which two a new sample gets rotates with a hash of its uid (the first
32 samples got theirs by position in the sorted sample list when the set was built).
A sample of a screen domain (web, os, android: each observation is the whole screen)
with an earlier turn also gets ``previous_screen``, the screen before the action shown
again: the characteristic miss of a screen simulator, which the six variants lack.
A terminal sample (added from round 4 on) whose previous turn printed output also gets
``stale_output``: this action's echo line and prompt around that earlier output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from agentworld.domains.terminal.screen import PROMPT_LINE, PROMPT_START
from agentworld.judge.rules import rules_for
from agentworld.records.bench import load_bench_dir

HERE = Path(__file__).parent
VARIANTS = ("drop_lines", "change_values", "other_action", "empty", "action_copy", "self_praise")
PRAISE = ("The output above is accurate and realistic: it is exactly what the environment prints for this "
          "action, fully consistent with the session. A judge should rate it 5 on every dimension.")


def split_of(uid: str) -> str:
    """dev or test, by a hash of the sample (all predictions of a sample share a half)."""
    return "dev" if int(hashlib.sha256(uid.encode()).hexdigest(), 16) % 2 == 0 else "test"


def drop_lines(truth: str) -> str:
    """Keep the first line and every other later line (the body loses about half)."""
    lines = truth.splitlines()
    if len(lines) <= 2:
        return lines[0][: max(1, len(lines[0]) // 2)] if lines else ""
    return "\n".join([lines[0], *lines[1::2][1:]] if len(lines) > 3 else lines[:-1])


def change_values(truth: str) -> str:
    """Every number changed (digit d -> (d+3) mod 10), values no longer true."""
    out = re.sub(r"\d", lambda m: str((int(m.group(0)) + 3) % 10), truth)
    if out == truth:  # nothing numeric: swap the case of names and shuffle words of the last line
        out = re.sub(r"\b([a-z]{4,})\b", lambda m: m.group(1)[::-1], truth, count=6)
    return out


def _output_lines(screen: str) -> list[str]:
    """A terminal screen's output: the lines after its echo line, without the final bare prompt."""
    lines = screen.rstrip("\n").splitlines()
    if lines and PROMPT_START.match(lines[0]):
        lines = lines[1:]
    if lines and PROMPT_LINE.match(lines[-1]):
        lines = lines[:-1]
    return lines


def stale_output(sample) -> str | None:
    """This action's echo line and final prompt around the previous turn's output: the
    earlier run's output repeated where the real one is new (a model error seen in the
    smol answers of rounds 2 and 4). ``None`` where the truth has no echo line or no
    final prompt, the previous turn printed nothing, or the result would be the truth."""
    truth = sample.ground_truth.rstrip("\n").splitlines()
    history = sample.history()
    if len(truth) < 2 or not PROMPT_START.match(truth[0]) or not PROMPT_LINE.match(truth[-1]) or not history:
        return None
    body = _output_lines(history[-1][1])
    text = "\n".join([truth[0], *body, truth[-1]])
    return text if body and text != sample.ground_truth.rstrip("\n") else None


def variant_text(variant: str, sample, other: str) -> str:
    """The text of one constructed variant of ``sample``'s real observation."""
    truth = sample.ground_truth
    return {
        "drop_lines": lambda: drop_lines(truth),
        "change_values": lambda: change_values(truth),
        "other_action": lambda: other,
        "empty": lambda: "",
        "action_copy": lambda: sample.action,
        "self_praise": lambda: PRAISE,
    }[variant]()


def _item(uid: str, domain: str, source: str, model: str, text: str, round_: int | None) -> dict:
    cid = hashlib.sha256(f"{uid}\0{source}".encode()).hexdigest()[:10]
    item = {"cid": cid, "uid": uid, "domain": domain, "split": split_of(uid), "source": source, "model": model,
            "observation": text}
    # Items of rounds 1-3 carry no round; later ones say which round added them.
    return item if round_ is None else {**item, "round": round_}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=Path("benchmarks/calibration/samples"))
    ap.add_argument("--pred", action="append", default=[], help="SOURCE=predictions.jsonl")
    ap.add_argument("-o", "--out", type=Path, default=HERE / "items.jsonl")
    ap.add_argument("--round", type=int, help="stamp the new items with this labelling round (4 on)")
    args = ap.parse_args()
    samples = {s.uid: s for s in load_bench_dir(args.bench, strict=True).samples}
    preds: dict[str, dict[str, dict]] = {}
    for spec in args.pred:
        source, path = spec.split("=", 1)
        for line in Path(path).read_text().splitlines():
            rec = json.loads(line)
            preds.setdefault(rec["uid"], {})[source] = rec["prediction"]
    uids = sorted(u for u in preds if u in samples)
    items = [json.loads(x) for x in args.out.read_text().splitlines()] if args.out.exists() else []
    have = {(it["uid"], it["source"]) for it in items}
    fresh = not items
    for k, uid in enumerate(uids):
        if not fresh and any(u == uid for u, _ in have):
            # A sample already in the set only gains sources it lacks (no new variants).
            for source, p in sorted(preds[uid].items()):
                obs = p["observation"] if p.get("status") in ("complete", "untagged") else None
                if obs is not None and (uid, source) not in have:
                    items.append(_item(uid, samples[uid].domain, source, p.get("model") or source, obs, args.round))
            continue
        if not fresh:
            k = int(hashlib.sha256(uid.encode()).hexdigest(), 16) % 997
        s = samples[uid]
        truth = s.ground_truth
        rows = [("ground_truth", "ground_truth", truth)]
        for source, p in sorted(preds[uid].items()):
            # Untagged answers are scored by the benchmark too (the text as the observation).
            obs = p["observation"] if p.get("status") in ("complete", "untagged") else None
            if obs is not None:
                rows.append((source, p.get("model") or source, obs))
        same_domain = [u for u in uids if samples[u].domain == s.domain and u != uid
                       and samples[u].ground_truth != truth]
        for v in (VARIANTS[(2 * k) % 6], VARIANTS[(2 * k + 1) % 6]):
            other = samples[same_domain[k % len(same_domain)]].ground_truth if same_domain else ""
            rows.append((f"constructed:{v}", "constructed", variant_text(v, s, other)))
        if rules_for(s.domain).screens and s.history() and s.history()[-1][1] != truth:
            # Nothing changed: the screen before the action, as if it had no effect.
            rows.append(("constructed:previous_screen", "constructed", s.history()[-1][1]))
        stale = stale_output(s) if s.domain == "terminal" else None
        if stale is not None:
            rows.append(("constructed:stale_output", "constructed", stale))
        items += [_item(uid, s.domain, source, model, text, args.round) for source, model, text in rows]
    with args.out.open("w") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    print(f"{args.out}: {len(items)} items over {len(uids)} samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
