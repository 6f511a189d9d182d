"""Does a re-recording reproduce the shipped ground truth? Re-record a fixed seed set, compare.

For each domain this records the first ``--episodes`` training and ``--test-episodes``
held-out seeds again with ``agentworld collect`` (into a temporary folder, or ``--keep DIR``),
pairs each new trajectory with the shipped one of the same job (template and seed) in
``benchmarks/local/trajectories/<domain>.jsonl``, and compares the initial state, the
turns' observations and the number of turns. Text is compared after masking the *declared
runtime fields* below: values the environment documents as taken at run time (a clock
reading, a duration, a process id), which a world model is asked to make plausible, not
to know: clock readings, durations, process ids and ps statistics, and git object ids
(a commit hashes its times). Everything else must match: the goal is no differing observation.

    python benchmarks/rerecord.py                         # every domain, 3 + 2 seeds each
    python benchmarks/rerecord.py --domain terminal --domain mcp --show 3
    python benchmarks/rerecord.py --against runs/collect   # compare files recorded already

Prints one row per domain: trajectories paired, observations compared, how many differ
outside the runtime fields, how many differ only inside them, and (``--show N``) the first
N differing lines of each kind.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.cli.collect._app import resume_key
from agentworld.records.trajectory import Trajectory, read_trajectories

SHIPPED = Path(__file__).parent / "local" / "trajectories"
DOMAINS = ("terminal", "mcp", "search", "swe", "os", "web")

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_DAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
RUNTIME_FIELDS: dict[str, re.Pattern[str]] = {
    # A clock reading: ISO-8601 stamps, `date`'s and `ls -l`'s forms, bare times of day.
    "timestamp": re.compile(
        rf"\d{{4}}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
        rf"|(?:{_DAY},? )?{_MONTH} [ \d]\d(?: \d\d:\d\d(?::\d\d)?| +\d{{4}}\b)?(?: (?:UTC|GMT))?(?: \d{{4}})?"
        rf"|\b\d\d:\d\d:\d\d\b|\b\d{{4}}-\d\d-\d\d\b|\b\d\d/{_MONTH}/\d{{4}}\b"
    ),
    # Git object ids: a commit's id hashes its author and committer times.
    "git_object": re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)(?:[0-9a-f]{7,12}|[0-9a-f]{40})\b"),
    # `ps aux` rows: CPU and memory shares, sizes and state flags of live processes.
    "process_stats": re.compile(r"(?m)^(\S+\s+\d+)\s+\d+\.\d\s+\d+\.\d\s+\d+\s+\d+\s+(\S+)\s+\S+\s+\S+"),
    # How long something took: `real 0m0.003s`, pytest's `in 0.12s`, `took 35ms`.
    "duration": re.compile(r"\b\d+m\d+\.\d+s\b|\b\d+(?:\.\d+)?\s?(?:s|ms|us|µs|seconds?)\b"),
    # Process ids shown by job control (`[1] 4242`) and `ps`/`top` rows.
    "pid": re.compile(r"(?m)^\[\d+\]\+?\s+\d+$|^\s*\d+(?=\s+(?:root|nobody|user)\b)"),
}
"""The declared runtime fields, named; ``docs/design.md`` ("Ground truth") lists them too."""


def mask(text: str) -> str:
    for name, pattern in RUNTIME_FIELDS.items():
        # A pattern with groups keeps them (a ps row keeps its user and pid) and masks the rest.
        text = pattern.sub(lambda m, n=name: " ".join([*m.groups(), f"<{n}>"]) if m.groups() else f"<{n}>", text)
    return text


@dataclass
class DomainReport:
    domain: str
    paired: int = 0
    unpaired: int = 0
    """New trajectories whose job the shipped file does not have."""
    compared: int = 0
    differ: int = 0
    """Observations (or initial states, or turn counts) that differ outside the runtime fields."""
    runtime_only: int = 0
    examples: list[str] = field(default_factory=list)
    runtime_examples: list[str] = field(default_factory=list)


def _texts(traj: Trajectory) -> list[tuple[str, str]]:
    return [("initial_state", traj.initial_state or "")] + [
        (f"turn {i}", turn.observation or "") for i, turn in enumerate(traj.turns, 1)]


def _first_diff(a: str, b: str) -> str:
    lines = [d for d in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
             if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    return " | ".join(lines[:2])[:300]


def compare(domain: str, shipped: Path, fresh: Path) -> DomainReport:
    key = resume_key(domain)
    by_job = {key(t): t for t in read_trajectories(shipped)}
    report = DomainReport(domain)
    for new in read_trajectories(fresh):
        old = by_job.get(key(new))
        if old is None:
            report.unpaired += 1
            continue
        report.paired += 1
        if len(old.turns) != len(new.turns):
            report.differ += 1
            report.examples.append(f"{key(new)}: {len(old.turns)} turns shipped, {len(new.turns)} now")
        for (where, a), (_, b) in zip(_texts(old), _texts(new), strict=False):
            report.compared += 1
            if a == b:
                continue
            if mask(a) == mask(b):
                report.runtime_only += 1
                report.runtime_examples.append(f"{key(new)} {where}: {_first_diff(a, b)}")
            else:
                report.differ += 1
                report.examples.append(f"{key(new)} {where}: {_first_diff(mask(a), mask(b))}")
    return report


def record(domain: str, out: Path, episodes: int, test_episodes: int) -> None:
    cmd = ["agentworld", "collect", domain, "--episodes", str(episodes), "--test-episodes", str(test_episodes),
           "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", action="append", choices=DOMAINS, help="repeatable (default: all six)")
    parser.add_argument("--episodes", type=int, default=3, help="training seeds re-recorded per domain")
    parser.add_argument("--test-episodes", type=int, default=2, help="held-out seeds re-recorded per domain")
    parser.add_argument("--shipped", type=Path, default=SHIPPED, help="folder of <domain>.jsonl to compare with")
    parser.add_argument("--against", type=Path, help="compare these <domain>.jsonl files instead of recording")
    parser.add_argument("--keep", type=Path, help="record into this folder and keep it (default: a temporary one)")
    parser.add_argument("--show", type=int, default=0, help="print the first N differences of each kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.against or args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        reports = []
        for domain in args.domain or DOMAINS:
            fresh = folder / f"{domain}.jsonl"
            if args.against is None:
                record(domain, fresh, args.episodes, args.test_episodes)
            reports.append(compare(domain, args.shipped / f"{domain}.jsonl", fresh))
    print(f"{'domain':<9} {'paired':>6} {'unpaired':>8} {'compared':>8} {'differ':>6} {'runtime only':>12}")
    for r in reports:
        print(f"{r.domain:<9} {r.paired:>6} {r.unpaired:>8} {r.compared:>8} {r.differ:>6} {r.runtime_only:>12}")
    print(f"total differing outside declared runtime fields: {sum(r.differ for r in reports)}")
    for r in reports if args.show else ():
        for line in r.examples[: args.show]:
            print(f"  differs  {r.domain}: {line}")
        for line in r.runtime_examples[: args.show]:
            print(f"  runtime  {r.domain}: {line}")


if __name__ == "__main__":
    main()
