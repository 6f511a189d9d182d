"""The retrieval floor before and after it became domain-sound, scored offline.

Indexes the train side of the recorded local split (what ``agentworld data split
benchmarks/local/trajectories --split train --exclude-bench benchmarks/local`` writes),
answers every held-out sample of ``benchmarks/local`` and scores the answers with the
rule scorer (0-100 per domain, as ``agentworld bench score`` reports). Rows:

- ``before``: the floor as of commit b7080a2 (read from git history): raw action words,
  domain guessed from the system prompt, every index searched when the guess fails;
- ``after, raw``: this floor -- per-domain action keys, the sample's domain only --
  answering with the nearest observation verbatim (``adapt=false``);
- ``after``: the same, with the terminal echo and prompt adapted to the session.

``cross`` counts answers taken from another domain's turns. ``--no-system`` asks again
without the system message (a caller whose prompt does not name the domain), where the
old floor's guess fails and it answers across domains.

    python benchmarks/retrieval_floor.py [--no-system]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentworld.bench.score import score_records
from agentworld.data.split import select_split
from agentworld.judge.rules import RuleScorer
from agentworld.models import load_backend
from agentworld.parsing import parse_prediction
from agentworld.prompts import format_observation, sample_messages
from agentworld.records.bench import BenchSample, load_bench_dir
from agentworld.records.prediction import Prediction
from agentworld.records.trajectory import write_trajectories
from agentworld.records.verdict import JudgedRecord

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "b7080a2"


def _old_floor(source: Path, tmp: Path):
    """The retrieval module of commit BEFORE, imported under another name; None without git."""
    try:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{BEFORE}:src/agentworld/models/retrieval.py"],
                              check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = tmp / "retrieval_before.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("retrieval_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.RetrievalBackend(source)


def _record(s: BenchSample, text: str, model: str, scorer: RuleScorer) -> JudgedRecord:
    parsed = parse_prediction(text)
    pred = Prediction(text=text, observation=parsed.observation, status=parsed.status, model=model)
    return JudgedRecord(uid=s.uid, domain=s.domain, id=s.id, turn_idx=s.turn_idx, sample_index=0, judge=scorer.name,
                        judgement=scorer.score_sync(s, pred), model=model,
                        observation=pred.observation if pred.ok else None, prediction_status=str(pred.status))


def _messages(s: BenchSample, no_system: bool) -> list[dict[str, str]]:
    msgs = sample_messages(s)
    return [m for m in msgs if m["role"] != "system"] if no_system else msgs


def _show(name: str, records: list[JudgedRecord], cross: dict[str, int], took: float) -> None:
    [group] = score_records(records).groups
    cells = "  ".join(f"{d} {b.total.score:6.2f} (cross {cross.get(d, 0)})" for d, b in group.domains.items())
    print(f"{name:<12} overall {group.overall.total.score:6.2f}  {cells}  [{len(records)} samples, {took:.1f}s]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=ROOT / "benchmarks" / "local")
    ap.add_argument("--trajectories", type=Path, default=ROOT / "benchmarks" / "local" / "trajectories")
    ap.add_argument("--no-system", action="store_true", help="Also ask without the system message.")
    args = ap.parse_args()
    samples = load_bench_dir(args.bench, strict=True).samples
    scorer = RuleScorer()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        train = tmp / "train.jsonl"
        sel = select_split([args.trajectories], split="train", exclude_bench=args.bench)
        write_trajectories(train, sel.trajectories)
        print(f"index: {len(sel.trajectories)} train-split trajectories; {len(samples)} held-out samples")

        old = _old_floor(train, tmp)
        domain_of = {t.id: t.domain for t in sel.trajectories}
        floors = {adapt: load_backend("retrieval", source=train, adapt=adapt) for adapt in (False, True)}
        for no_system in (False, True) if args.no_system else (False,):
            tag = " -sys" if no_system else ""
            if old is None:
                print(f"before: skipped (no git history with {BEFORE})")
            else:
                t0, records, cross = time.perf_counter(), [], {}
                for s in samples:
                    [(_, turn)] = old.nearest(_messages(s, no_system), 1)
                    own = old._indexes.get(s.domain)
                    if own is None or not any(turn is t for t in own.turns):
                        cross[s.domain] = cross.get(s.domain, 0) + 1
                    records.append(_record(s, format_observation(turn.observation, turn.reasoning), "before", scorer))
                _show("before" + tag, records, cross, time.perf_counter() - t0)
            for name, adapt in (("after, raw", False), ("after", True)):
                floor = floors[adapt]
                t0, records, cross = time.perf_counter(), [], {}
                for s in samples:
                    msgs = _messages(s, no_system)
                    [(_, turn)] = floor.nearest(msgs, domain=s.domain)
                    cross[s.domain] = cross.get(s.domain, 0) + (domain_of[turn.trajectory_id] != s.domain)
                    [text] = floor.answers(msgs, 1, s.domain)
                    records.append(_record(s, text, name, scorer))
                _show(name + tag, records, cross, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
