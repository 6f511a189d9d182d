"""Train/test split by trajectory (never by turn), with a leakage check.

Two trajectories are near-duplicates when the Jaccard similarity of their shingle sets
reaches ``near_duplicate``: a shingle is a hash of a word n-gram of one turn's action and
observation, lowercased, with digits and hex runs masked (so reruns that differ in PIDs,
timestamps or hashes still match, and small edits inside a turn do not hide a copy). Near-duplicates are grouped
(union-find) and a whole group goes to one side, chosen by a seeded hash of the group's
smallest id, so adding trajectories never moves the others. Trajectories of one template
(``Provenance.task``; SWE: the repository of ``repair:<repo>:<mutation>``), of templates
whose recordings are near-duplicates at template level (:func:`template_similarity`) and
of trajectories that copy each other's turns (:func:`turn_copy_pairs`) are grouped the same
way: whole template families are held out.

:func:`check_leakage` then verifies a split independently: no trajectory id on both
sides, no test trajectory with a near-duplicate in train, and no training trajectory that
copies a test trajectory's turns: more than :data:`MAX_SHARED_TURNS` shared turns, or at
least two making more than :data:`MAX_SHARED_FRACTION` of either one's turns (exact after
the masking above; trivial turns -- an empty action, a bare prompt -- and the environment's
vocabulary, a turn seen under :data:`VOCABULARY_SOURCES` or more templates, do not count).
One shared turn is never a leak on its own: recorded episodes of different templates end on
the same empty desktop or fetch the same page. It also reports, per held-out template, the
most similar training template (:class:`TemplateMatch`), flagging pairs at or above
``similar_templates`` (informational: the split of recorded data is the recorder's).

:func:`select_split` reads one side of a split recorded by ``agentworld collect``
(``Provenance.split``), optionally without the trajectories a benchmark evaluates:
``agentworld data split``.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
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
MAX_SHARED_TURNS = 2
"""A training trajectory sharing more non-trivial turns than this with a held-out one leaks it."""
MAX_SHARED_FRACTION = 0.3
"""... as does one sharing two or more making more than this share of either's non-trivial turns."""
VOCABULARY_SOURCES = 3
"""A turn recorded under this many templates (or template-less trajectories) is the
environment's vocabulary (``ls`` at the start of every episode): it never counts as copied."""
SIMILAR_TEMPLATES = 0.5
"""Template-level Jaccard (:func:`template_similarity`) flagged by the leakage check and
grouped by the split; on the recorded data one pair reaches it (os ``type_list`` ~
``save_new_document``, 0.55), the next is at 0.46."""


def _canonical(text: str) -> str:
    # Runtime metadata (PIDs, timestamps, sizes, temp names) differs between reruns of the
    # same episode; masking digits keeps such reruns recognisable as duplicates.
    return _DIGITS.sub("0", _HEX.sub("0", " ".join(text.lower().split())))


def turn_fingerprint(action: str, observation: str) -> bytes:
    text = _canonical(action) + "\x1e" + _canonical(observation)
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


def fingerprints(traj: Trajectory) -> frozenset[bytes]:
    return frozenset(turn_fingerprint(t.action, t.observation) for t in traj.turns)


def is_trivial_turn(action: str, observation: str) -> bool:
    """A turn that says nothing of its episode: an empty action, or an observation of at most
    one word (a bare prompt ``root@host:/w#``, ``>>>``, nothing)."""
    from agentworld.data.filters import is_empty_action

    return is_empty_action(action) or len(observation.split()) <= 1


def content_fingerprints(traj: Trajectory) -> frozenset[bytes]:
    """:func:`fingerprints` of the non-trivial turns (:func:`is_trivial_turn`)."""
    return frozenset(turn_fingerprint(t.action, t.observation) for t in traj.turns
                     if not is_trivial_turn(t.action, t.observation))


def template_of(traj: Trajectory) -> str | None:
    """The task template a trajectory was recorded from (``Provenance.task``; a SWE repair
    ``repair:<repo>:<mutation>`` is the repository's), or None."""
    task = traj.provenance.task
    if not task:
        return None
    return task.split(":")[1] if task.startswith("repair:") and task.count(":") >= 2 else task


def _sources(trajs: Sequence[Trajectory]) -> list[str]:
    # What a trajectory was recorded under: its template, else its id. Trajectories rebuilt
    # from benchmark samples carry no provenance: they take the template of the same id.
    by_id = {t.id: tmpl for t in trajs if (tmpl := template_of(t))}
    return [f"{t.domain}/{template_of(t) or by_id.get(t.id) or '#' + t.id}" for t in trajs]


def turn_copy_pairs(
    trajs: Sequence[Trajectory], *, boundary: int | None = None, max_shared: int = MAX_SHARED_TURNS,
    max_fraction: float = MAX_SHARED_FRACTION, vocabulary: int = VOCABULARY_SOURCES,
) -> list[tuple[int, int, int, float]]:
    """(i, j, shared turns, shared fraction) for the pairs (i < j; with ``boundary``, only
    i < boundary <= j) of trajectories that copy each other's turns:
    more than ``max_shared`` non-trivial turns in common, or at least two that are more than
    ``max_fraction`` of either trajectory's non-trivial turns. The fraction is of the smaller
    trajectory. Turns recorded under ``vocabulary`` or more sources (templates, or ids of
    template-less trajectories) do not count."""
    fps = [content_fingerprints(t) for t in trajs]
    sources = _sources(trajs)
    seen_under: dict[bytes, set[str]] = defaultdict(set)
    for fp, src in zip(fps, sources, strict=True):
        for f in fp:
            seen_under[f].add(src)
    common = {f for f, srcs in seen_under.items() if len(srcs) >= vocabulary}
    fps = [fp - common for fp in fps]
    pairs = []
    for i, shared in _shared_counts(fps, boundary):
        for j, n in shared.items():
            if n < 2:
                continue
            fraction = n / min(len(fps[i]), len(fps[j]))
            if n > max_shared or fraction > max_fraction:
                pairs.append((i, j, n, fraction))
    return pairs


@dataclass(frozen=True)
class TemplateMatch:
    """A held-out template and the most similar training template of its domain."""

    domain: str
    held_out: str
    train: str
    jaccard: float
    """Jaccard of the two templates' shingle sets (every turn of every trajectory of each)."""
    max_pair: float
    """The highest shingle Jaccard of a held-out trajectory with a training one of the two."""


def template_similarity(
    train: Sequence[Trajectory], test: Sequence[Trajectory],
    train_shingles: Sequence[frozenset[int]] | None = None, test_shingles: Sequence[frozenset[int]] | None = None,
) -> list[TemplateMatch]:
    """For each held-out template (:func:`template_of`; trajectories without one take the
    template of the same id, else are left out), the training template of the same domain
    whose recordings are most alike, by Jaccard of their pooled shingles. A template on both
    sides is compared with itself. Sorted by domain, then most similar first."""
    train_sh = list(train_shingles) if train_shingles is not None else [shingles(t) for t in train]
    test_sh = list(test_shingles) if test_shingles is not None else [shingles(t) for t in test]
    sources = _sources([*train, *test])
    pools: list[dict[tuple[str, str], list[frozenset[int]]]] = [defaultdict(list), defaultdict(list)]
    for k, sh in enumerate([*train_sh, *test_sh]):
        domain, _, name = sources[k].partition("/")
        if not name.startswith("#"):
            pools[k >= len(train)][(domain, name)].append(sh)
    train_pool, test_pool = pools
    test_unions = {key: frozenset().union(*sets) for key, sets in test_pool.items()}
    train_unions = {key: frozenset().union(*sets) for key, sets in train_pool.items()}
    out = []
    for (domain, held), hu in test_unions.items():
        best: tuple[float, str] | None = None
        for (d, name), tu in train_unions.items():
            if d == domain:
                jac = _jaccard(hu, tu)
                if best is None or (jac, name) > best:
                    best = (jac, name)
        if best is None:
            continue
        jac, name = best
        max_pair = max(_jaccard(a, b) for a in test_pool[(domain, held)] for b in train_pool[(domain, name)])
        out.append(TemplateMatch(domain, held, name, jac, max_pair))
    out.sort(key=lambda m: (m.domain, -m.jaccard, m.held_out))
    return out


def _jaccard(a: frozenset, b: frozenset) -> float:
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


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
    pairs = []
    for i, shared in _shared_counts(fps, boundary, max_df=max_df):
        fp = fps[i]
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


def _shared_counts(fps: Sequence[frozenset], boundary: int | None, *,
                   max_df: int | None = None) -> Iterator[tuple[int, dict[int, int]]]:
    """For each left set i, how many elements it shares with each later set j (i < j; with
    ``boundary``, only j >= boundary), from an inverted index. Elements in more than
    ``max_df`` sets propose no candidates."""
    # With a boundary only the right side is indexed: the left is only ever looked up.
    low = boundary if boundary is not None else 0
    index: dict[object, list[int]] = defaultdict(list)
    for j in range(low, len(fps)):
        for f in fps[j]:
            index[f].append(j)
    for i in range(boundary if boundary is not None else len(fps)):
        shared: dict[int, int] = defaultdict(int)
        for f in fps[i]:
            posting = index.get(f)
            if posting is None or (max_df is not None and len(posting) > max_df):
                continue
            for j in posting:
                if j > i:
                    shared[j] += 1
        yield i, shared


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
    trajectories: Sequence[Trajectory], *, test_fraction: float = 0.1, seed: int = 0, near_duplicate: float = 0.8,
    similar_templates: float = SIMILAR_TEMPLATES,
) -> Split:
    """Seeded split by trajectory; groups never straddle the sides: near-duplicates, a
    template's trajectories, templates alike at ``similar_templates`` (a family) and
    trajectories that copy each other's turns."""
    if not 0 <= test_fraction <= 1:
        raise ValueError(f"test_fraction must be in [0, 1], got {test_fraction}")
    fps = [shingles(t) for t in trajectories]
    uf = _UnionFind(len(trajectories))
    pairs = near_duplicate_pairs(fps, near_duplicate)
    for i, j, _ in pairs:
        uf.union(i, j)
    for i, j, _, _ in turn_copy_pairs(trajectories):
        uf.union(i, j)
    first_by_source: dict[str, int] = {}
    for i, src in enumerate(_sources(trajectories)):
        if not src.partition("/")[2].startswith("#"):
            uf.union(first_by_source.setdefault(src, i), i)
    for a, b in _similar_template_pairs(trajectories, fps, similar_templates):
        uf.union(first_by_source[a], first_by_source[b])
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


def _similar_template_pairs(trajs: Sequence[Trajectory], sh: Sequence[frozenset[int]],
                            threshold: float) -> list[tuple[str, str]]:
    # Source pairs (domain/template) whose pooled shingles reach the threshold.
    pools: dict[str, set[int]] = defaultdict(set)
    for src, s in zip(_sources(trajs), sh, strict=True):
        if not src.partition("/")[2].startswith("#"):
            pools[src].update(s)
    keys = sorted(pools)
    return [(a, b) for n, a in enumerate(keys) for b in keys[n + 1:]
            if a.partition("/")[0] == b.partition("/")[0] and _jaccard(frozenset(pools[a]), frozenset(pools[b])) >= threshold]


@dataclass
class LeakageReport:
    shared_ids: list[str] = field(default_factory=list)
    near_duplicates: list[tuple[str, str, float]] = field(default_factory=list)
    """(test id, train id, score) pairs that leak: a shingle Jaccard at or above the
    threshold, or a training trajectory that copies the test one's turns (then the score is
    the copied share of the smaller one's turns; the pair is in ``turn_copies`` too)."""
    turn_copies: list[tuple[str, str, int, float]] = field(default_factory=list)
    """(test id, train id, shared turns, shared fraction): copied turns (:func:`turn_copy_pairs`)."""
    shared_turns: int = 0
    """Test turns whose exact fingerprint also occurs in train (informational)."""
    test_turns: int = 0
    templates: list[TemplateMatch] = field(default_factory=list)
    """Each held-out template's most similar training template, per domain (informational)."""
    similar_templates_at: float = SIMILAR_TEMPLATES

    @property
    def ok(self) -> bool:
        return not self.shared_ids and not self.near_duplicates

    @property
    def similar_templates(self) -> list[TemplateMatch]:
        """Template pairs at or above ``similar_templates_at``: one family split across the sides."""
        return [m for m in self.templates if m.jaccard >= self.similar_templates_at]


def check_leakage(
    train: Sequence[Trajectory], test: Sequence[Trajectory], *, near_duplicate: float = 0.9,
    max_shared_turns: int = MAX_SHARED_TURNS, max_shared_fraction: float = MAX_SHARED_FRACTION,
    similar_templates: float = SIMILAR_TEMPLATES,
) -> LeakageReport:
    """Check a split: no id on both sides, no test trajectory with a near-duplicate in train,
    no training trajectory that copies a test one's turns (:func:`turn_copy_pairs`); and
    report how alike the held-out templates are to the training ones (:func:`template_similarity`).

    ``test`` is everything held out: a builder's own test split, trajectories recorded on
    the test side, and those a benchmark evaluates.
    """
    report = LeakageReport(similar_templates_at=similar_templates)
    train_ids = {t.id for t in train}
    report.shared_ids = sorted({t.id for t in test} & train_ids)
    train_fps = [fingerprints(t) for t in train]
    test_fps = [fingerprints(t) for t in test]
    all_train_turns = frozenset().union(*train_fps) if train_fps else frozenset()
    for fp in test_fps:
        report.test_turns += len(fp)
        report.shared_turns += len(fp & all_train_turns)
    n_train = len(train)
    train_sh = [shingles(t) for t in train]
    test_sh = [shingles(t) for t in test]
    for i, j, jac in near_duplicate_pairs([*train_sh, *test_sh], near_duplicate, boundary=n_train):
        report.near_duplicates.append((test[j - n_train].id, train[i].id, jac))
    found = {(a, b) for a, b, _ in report.near_duplicates}
    for i, j, n, fraction in turn_copy_pairs([*train, *test], boundary=n_train, max_shared=max_shared_turns,
                                             max_fraction=max_shared_fraction):
        pair = (test[j - n_train].id, train[i].id)
        report.turn_copies.append((*pair, n, fraction))
        if pair not in found:
            found.add(pair)
            report.near_duplicates.append((*pair, fraction))
    report.templates = template_similarity(train, test, train_sh, test_sh)
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
    leaked: list[tuple[str, str, float]] = field(default_factory=list)
    """(training id, held-out id, score): training trajectories left out because they leak a
    held-out one (:func:`check_leakage`: a near-duplicate, or copied turns)."""
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
    # Bare actions: a sample that presents its actions as published records do evaluates
    # the same turns as the bare trajectory it came from.
    bare = {key: s.with_bare_actions() for key, s in longest.items()}
    return {
        key: Trajectory(id=key, domain=s.domain, turns=[
            Turn(action=a, observation=o) for a, o in [*s.history(), (s.turn_prompt, s.ground_truth)]
        ])
        for key, s in bare.items()
    }


def bench_trajectory_ids(directories: Sequence[str | Path]) -> set[str]:
    """Ids of the trajectories the benchmark samples under ``directories`` evaluate."""
    return set(bench_trajectories(directories))


def select_split(sources: Sequence[str | Path], *, split: str = "train",
                 exclude_bench: str | Path | None = None, drop_leaks: bool = True,
                 near_duplicate: float = 0.9) -> SplitSelection:
    """The trajectories of one side of a recorded split (``Provenance.split``, stamped by
    ``agentworld collect``).

    ``test`` keeps the held-out trajectories; ``train`` keeps every other one, including
    trajectories recorded without a split. With ``exclude_bench``, trajectories a
    benchmark sample there evaluates (:func:`bench_trajectories`) are left out too, so a training set
    or a retrieval index never holds an evaluated episode. With ``drop_leaks`` (train
    only), training trajectories that leak a held-out one -- the other side read, or a
    benchmark's -- are left out and listed in ``leaked`` (:func:`check_leakage`, at
    ``near_duplicate``). Bad lines are skipped and listed in ``errors``.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (known: {', '.join(SPLITS)})")
    bench = bench_trajectories([exclude_bench] if exclude_bench is not None else [])
    held_out = set(bench)
    others: list[Trajectory] = []
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
                others.append(traj)
            elif traj.id in held_out:
                out.in_bench += 1
                others.append(traj)
            else:
                out.trajectories.append(traj)
    if split == "train" and drop_leaks and out.trajectories and (others or bench):
        report = check_leakage(out.trajectories, [*others, *bench.values()], near_duplicate=near_duplicate)
        out.leaked = sorted({(train_id, test_id, score) for test_id, train_id, score in report.near_duplicates})
        leaked = {train_id for train_id, _, _ in out.leaked}
        out.trajectories = [t for t in out.trajectories if t.id not in leaked]
    return out
