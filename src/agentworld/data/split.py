"""Train/test split by trajectory (never by turn), with a leakage check.

Two trajectories are near-duplicates when the Jaccard similarity of their shingle sets
reaches ``near_duplicate``: a shingle is a hash of a word n-gram of one turn's action and
observation, lowercased, with digits and hex runs masked (so reruns that differ in PIDs,
timestamps or hashes still match, and small edits inside a turn do not hide a copy). Near-duplicates are grouped
(union-find) and a whole group goes to one side, chosen by a seeded hash of the group's
smallest id, so adding trajectories never moves the others. :func:`check_leakage` then
verifies a split independently: no trajectory id on both sides and no test trajectory
with a near-duplicate in train. Shared single turns (``pwd`` -> ``/workspace``) are
counted for information; they are the environment's vocabulary, not leakage.

:func:`select_split` reads one side of a split recorded by ``agentworld collect``
(``Provenance.split``), optionally without the trajectories a benchmark evaluates:
``agentworld data split``.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentworld.jsonl import LineError
from agentworld.records.bench import BenchSample, load_bench_dir
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories
from agentworld.seeding import unit_hash

_DIGITS = re.compile(r"\d+")
# Hex runs with at least one digit (commit ids, container ids, hashes) are masked whole.
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b")
SHINGLE_WORDS = 3
"""Words per shingle: short enough that one changed word costs few shingles."""


def _canonical(text: str) -> str:
    # Runtime metadata (PIDs, timestamps, sizes, temp names) differs between reruns of the
    # same episode; masking digits keeps such reruns recognisable as duplicates.
    return _DIGITS.sub("0", _HEX.sub("0", " ".join(text.lower().split())))


def turn_fingerprint(action: str, observation: str) -> bytes:
    text = _canonical(action) + "\x1e" + _canonical(observation)
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


def fingerprints(traj: Trajectory) -> frozenset[bytes]:
    return frozenset(turn_fingerprint(t.action, t.observation) for t in traj.turns)


def shingles(traj: Trajectory, n: int = SHINGLE_WORDS) -> frozenset[int]:
    """Hashed word n-grams of each turn (never across turns), masked as in :func:`_canonical`.

    Python's string hash is enough: the sets are compared within one process only.
    """
    out: set[int] = set()
    for t in traj.turns:
        words = [*_canonical(t.action).split(), "\x1e", *_canonical(t.observation).split()]
        if len(words) <= n:
            out.add(hash(" ".join(words)))
        else:
            out.update(hash(" ".join(words[k:k + n])) for k in range(len(words) - n + 1))
    return frozenset(out)


def near_duplicate_pairs(
    fps: Sequence[frozenset], threshold: float, *, max_df: int = 200, boundary: int | None = None
) -> list[tuple[int, int, float]]:
    """Index pairs (i < j) whose set Jaccard is >= threshold.

    Candidates come from an inverted index; elements shared by more than ``max_df``
    sets are environment vocabulary and do not propose candidates (they still count in
    the Jaccard of pairs proposed by rarer ones). With ``boundary`` only pairs across it
    (i < boundary <= j) are compared: a leakage check needs no train-train pairs.
    """
    # With a boundary only the right side is indexed: the left is only ever looked up.
    low = boundary if boundary is not None else 0
    index: dict[object, list[int]] = defaultdict(list)
    for j in range(low, len(fps)):
        for f in fps[j]:
            index[f].append(j)
    pairs = []
    for i in range(boundary if boundary is not None else len(fps)):
        fp = fps[i]
        shared: dict[int, int] = defaultdict(int)
        for f in fp:
            posting = index.get(f)
            if posting is None or len(posting) > max_df:
                continue
            for j in posting:
                if j > i:
                    shared[j] += 1
        for j in shared:
            other = fps[j]
            # Jaccard is at most the size ratio: skip the set operations when that is too low.
            if min(len(fp), len(other)) < threshold * max(len(fp), len(other)):
                continue
            inter = len(fp & other)
            union = len(fp) + len(other) - inter
            jac = inter / union if union else 0.0
            if jac >= threshold:
                pairs.append((i, j, jac))
    return pairs


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


@dataclass
class Split:
    train: list[Trajectory]
    test: list[Trajectory]
    groups_merged: int = 0
    """Near-duplicate trajectories kept on the side of their group."""


def split_trajectories(
    trajectories: Sequence[Trajectory], *, test_fraction: float = 0.1, seed: int = 0, near_duplicate: float = 0.8
) -> Split:
    """Seeded split by trajectory; near-duplicate groups never straddle the sides."""
    if not 0 <= test_fraction <= 1:
        raise ValueError(f"test_fraction must be in [0, 1], got {test_fraction}")
    fps = [shingles(t) for t in trajectories]
    uf = _UnionFind(len(trajectories))
    pairs = near_duplicate_pairs(fps, near_duplicate)
    for i, j, _ in pairs:
        uf.union(i, j)
    # Identical ids are one trajectory written twice: they must land together too.
    first_by_id: dict[str, int] = {}
    for i, t in enumerate(trajectories):
        if t.id in first_by_id:
            uf.union(first_by_id[t.id], i)
        else:
            first_by_id[t.id] = i
    group_key: dict[int, str] = {}
    for i, t in enumerate(trajectories):
        root = uf.find(i)
        group_key[root] = min(group_key.get(root, t.id), t.id)
    out = Split([], [])
    for i, t in enumerate(trajectories):
        root = uf.find(i)
        side = out.test if unit_hash(seed, "split", group_key[root]) < test_fraction else out.train
        side.append(t)
        if root != i:
            out.groups_merged += 1
    return out


@dataclass
class LeakageReport:
    shared_ids: list[str] = field(default_factory=list)
    near_duplicates: list[tuple[str, str, float]] = field(default_factory=list)
    """(test id, train id, jaccard) pairs above the threshold."""
    shared_turns: int = 0
    """Test turns whose exact fingerprint also occurs in train (informational)."""
    test_turns: int = 0

    @property
    def ok(self) -> bool:
        return not self.shared_ids and not self.near_duplicates


def check_leakage(
    train: Sequence[Trajectory], test: Sequence[Trajectory], *, near_duplicate: float = 0.9
) -> LeakageReport:
    """Check a split: no id on both sides, no test trajectory with a near-duplicate in train.

    ``test`` is everything held out: a builder's own test split, trajectories recorded on
    the test side, and those a benchmark evaluates.
    """
    report = LeakageReport()
    train_ids = {t.id for t in train}
    report.shared_ids = sorted({t.id for t in test} & train_ids)
    train_fps = [fingerprints(t) for t in train]
    test_fps = [fingerprints(t) for t in test]
    all_train_turns = frozenset().union(*train_fps) if train_fps else frozenset()
    for fp in test_fps:
        report.test_turns += len(fp)
        report.shared_turns += len(fp & all_train_turns)
    n_train = len(train)
    sets = [shingles(t) for t in train] + [shingles(t) for t in test]
    for i, j, jac in near_duplicate_pairs(sets, near_duplicate, boundary=n_train):
        report.near_duplicates.append((test[j - n_train].id, train[i].id, jac))
    return report


# -- one side of a recorded split ----------------------------------------------------------

SPLITS = ("train", "test")


@dataclass
class SplitSelection:
    """What :func:`select_split` kept and why the rest was left out."""

    trajectories: list[Trajectory] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    read: int = 0
    other_split: int = 0
    """Trajectories recorded on the other side of the split."""
    in_bench: int = 0
    """Trajectories left out because a benchmark sample evaluates them."""
    errors: list[LineError] = field(default_factory=list)
    """Bad lines (skipped), with file and line."""


def trajectory_files(source: str | Path) -> list[Path]:
    """The trajectory files of ``source``: the file itself, or a directory's ``*.jsonl``
    (sorted) without the ``*.failures.jsonl`` records of failed collection jobs."""
    path = Path(source)
    if path.is_dir():
        return [p for p in sorted(path.glob("*.jsonl")) if not p.name.endswith(".failures.jsonl")]
    if not path.exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    return [path]


def bench_trajectories(directories: Sequence[str | Path]) -> dict[str, Trajectory]:
    """The trajectories the benchmark samples under ``directories`` evaluate, by id (a
    sample's ``trajectory_id``, or failing that its id before the first ``:``), rebuilt
    from the longest sample's turns, so near-copies can be found even when the evaluated
    trajectory itself is not among a build's inputs."""
    longest: dict[str, BenchSample] = {}
    for directory in directories:
        bench = Path(directory)
        if not bench.is_dir():
            raise FileNotFoundError(f"no such benchmark directory: {bench}")
        for s in load_bench_dir(bench).samples:
            tid = (s.model_extra or {}).get("trajectory_id")
            key = str(tid) if tid is not None else str(s.id).split(":", 1)[0]
            if key not in longest or s.turn_idx > longest[key].turn_idx:
                longest[key] = s
    return {
        key: Trajectory(id=key, domain=s.domain, turns=[
            Turn(action=a, observation=o) for a, o in [*s.history(), (s.turn_prompt, s.ground_truth)]
        ])
        for key, s in longest.items()
    }


def bench_trajectory_ids(directories: Sequence[str | Path]) -> set[str]:
    """Ids of the trajectories the benchmark samples under ``directories`` evaluate."""
    return set(bench_trajectories(directories))


def select_split(sources: Sequence[str | Path], *, split: str = "train",
                 exclude_bench: str | Path | None = None) -> SplitSelection:
    """The trajectories of one side of a recorded split (``Provenance.split``, stamped by
    ``agentworld collect``).

    ``test`` keeps the held-out trajectories; ``train`` keeps every other one, including
    trajectories recorded without a split. With ``exclude_bench``, trajectories a
    benchmark sample there evaluates (:func:`bench_trajectories`) are left out too, so a training set
    or a retrieval index never holds an evaluated episode. Bad lines are skipped and
    listed in ``errors``.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
    held_out = bench_trajectory_ids([exclude_bench] if exclude_bench is not None else [])
    out = SplitSelection()
    for source in sources:
        out.files.extend(trajectory_files(source))
    for path in out.files:
        loaded_trajs = read_trajectories(path)
        out.errors.extend(loaded_trajs.errors)
        for traj in loaded_trajs.items:
            out.read += 1
            if (traj.provenance.split == "test") != (split == "test"):
                out.other_split += 1
            elif traj.id in held_out:
                out.in_bench += 1
            else:
                out.trajectories.append(traj)
    return out
