"""Run many recording episodes in parallel: the loop behind every ``agentworld collect``.

Each :class:`EpisodeJob` becomes one trajectory. Jobs run on a bounded pool of worker
threads (episodes spend their time waiting on sandboxes, servers or model endpoints);
finished trajectories are appended to one JSONL file as they arrive, so a killed run
resumes where it stopped: jobs whose id is already in the file are skipped. With the
Ray executor (:mod:`agentworld.executors.episodes`) each job is a Ray task instead and
its trajectory streams back to this process, which stays the only writer. A job that
raises is recorded (with its error) in ``<out>.failures.jsonl`` and counted, never
dropped silently, and is tried again on the next run. Trajectories of held-out jobs
(``split == "test"``) become AgentWorldBench samples in ``<bench_dir>/<domain>_test.jsonl``,
except, when a ``turn_key`` is given, those with a turn whose key some training
trajectory of the same file also has (a shared corpus page, the same clock reading):
such a sample would test recall of a training turn, not prediction.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import traceback
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.executors.config import ExecutorConfig
from agentworld.executors.episodes import Prereq, episode_pool
from agentworld.jsonl import JsonlAppender, write_jsonl
from agentworld.records.select import TurnPolicy, trajectories_to_samples
from agentworld.records.trajectory import Provenance, Trajectory, Turn, read_trajectories


@dataclass(frozen=True)
class EpisodeJob:
    """One episode to record. ``job_id`` must be stable across runs (it is the resume key)."""

    job_id: str
    seed: int
    split: str = "train"
    """``train`` or ``test``; test-split trajectories become benchmark samples."""
    task: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    split_by: str | None = None
    """The rule that put the job's template on its side (e.g. ``template-v1``), stamped in provenance."""


@dataclass
class CollectionReport:
    """What a collection run did; ``failed`` jobs are listed with their errors."""

    out: Path
    total: int = 0
    done: int = 0
    skipped: int = 0
    """Jobs already recorded by an earlier run."""
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    bench_files: dict[str, int] = field(default_factory=dict)
    """Benchmark file -> number of samples written."""
    bench_left_out: int = 0
    """Held-out trajectories kept out of the benchmark: a turn of theirs is in training data."""
    notes: list[str] = field(default_factory=list)
    """What the executor reported (e.g. Ray nodes without the environment's prerequisites)."""
    elapsed_s: float = 0.0

    @property
    def episodes_per_minute(self) -> float:
        return 60.0 * self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0


RunOne = Callable[[EpisodeJob], "Trajectory | Any"]
NearDuplicates = Callable[[list[Trajectory], list[Trajectory]], Iterable[str]]
"""(training trajectories, held-out ones) -> ids of the held-out ones too close to training
(the data builders' leakage check: :func:`agentworld.data.split.check_leakage`)."""


def failures_path(out: Path) -> Path:
    return out.with_name(out.name.removesuffix(".jsonl") + ".failures.jsonl")


ResumeKey = Callable[[Trajectory], str]
"""A recorded trajectory -> the id of the job it fulfils (default: ``Provenance.job_id``, else
the trajectory id); lets a caller that changed its job ids keep reading older files."""


def recorded_job_ids(out: Path, resume_key: ResumeKey | None = None) -> set[str]:
    """Job ids already in ``out`` (bad lines are ignored: their jobs run again)."""
    if not out.exists():
        return set()
    return {(resume_key or _job_id)(t) for t in read_trajectories(out)}


def run_collection(
    jobs: Iterable[EpisodeJob],
    run_one: RunOne,
    *,
    out: str | Path,
    workers: int = 2,
    bench_dir: str | Path | None = None,
    desc: str = "episodes",
    policy: TurnPolicy | str = TurnPolicy.spread,
    show_progress: bool = True,
    turn_key: Callable[[Turn], Hashable] | None = None,
    near_duplicates: NearDuplicates | None = None,
    executor: ExecutorConfig | None = None,
    prereq: Prereq | None = None,
    resume_key: ResumeKey | None = None,
) -> CollectionReport:
    """Record every job not yet in ``out`` with ``run_one`` (sync or async) on ``workers`` threads,
    or, with a Ray ``executor``, as Ray tasks on the nodes that pass ``prereq`` (``run_one``
    and ``prereq`` must pickle). Either way only this process writes the output files.
    ``resume_key`` maps a recorded trajectory to its job id (:data:`ResumeKey`).

    Leftovers of killed runs are swept first (once per process; see :mod:`agentworld.envs.sweep`).
    """
    from agentworld.envs.sweep import sweep_leftovers

    sweep_leftovers()
    out = Path(out)
    jobs = list(jobs)
    ids = [j.job_id for j in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError("job ids must be unique (they are the resume key)")
    report = CollectionReport(out=out, total=len(jobs))
    done_ids = recorded_job_ids(out, resume_key)
    todo = [j for j in jobs if j.job_id not in done_ids]
    report.skipped = len(jobs) - len(todo)
    t0 = time.monotonic()
    with JsonlAppender(out) as traj_out, JsonlAppender(failures_path(out)) as fail_out, \
            _Progress(show_progress, desc, len(jobs), report.skipped) as bar, \
            episode_pool(executor, workers, prereq) as pool:
        report.notes = pool.notes
        pending: dict[Any, EpisodeJob] = {}
        queue = iter(todo)
        try:
            while True:
                while len(pending) < pool.capacity and (job := next(queue, None)) is not None:
                    pending[pool.submit(_call, run_one, job)] = job
                if not pending:
                    break
                for handle in pool.wait(pending):
                    job = pending.pop(handle)
                    try:
                        traj = _stamp(pool.result(handle), job)
                    except Exception as exc:  # noqa: BLE001 - every failure is recorded and counted
                        report.failed += 1
                        msg = f"{type(exc).__name__}: {exc}"
                        report.failures.append((job.job_id, msg))
                        fail_out.append({"job_id": job.job_id, "seed": job.seed, "task": job.task,
                                         "error": msg, "traceback": traceback.format_exc()[-4000:],
                                         "time": time.time()})
                    else:
                        traj_out.append(traj)
                        report.done += 1
                    bar.advance(report.failed)
        except BaseException:
            pool.cancel(pending)
            raise
    report.elapsed_s = time.monotonic() - t0
    if bench_dir is not None:
        test_ids = {j.job_id for j in jobs if j.split == "test"}
        report.bench_files, report.bench_left_out = write_bench(out, Path(bench_dir), test_ids, policy=policy,
                                                                turn_key=turn_key, near_duplicates=near_duplicates,
                                                                resume_key=resume_key)
    return report


def write_bench(out: Path, bench_dir: Path, test_ids: set[str], *, policy: TurnPolicy | str = TurnPolicy.spread,
                turn_key: Callable[[Turn], Hashable] | None = None,
                near_duplicates: NearDuplicates | None = None,
                resume_key: ResumeKey | None = None) -> tuple[dict[str, int], int]:
    """(Re)write ``<domain>_test.jsonl`` from the held-out trajectories recorded in ``out``;
    returns the samples written per file and how many held-out trajectories were left
    out for sharing a turn (by ``turn_key``) with a training trajectory, or for being a
    near-duplicate of one (``near_duplicates``: the ids among the held-out ones)."""
    key = resume_key or _job_id
    trajs = list(read_trajectories(out))
    train = [traj for traj in trajs if key(traj) not in test_ids]
    seen = {turn_key(t) for traj in train for t in traj.turns} if turn_key else set()
    held = [traj for traj in trajs if key(traj) in test_ids and len(traj.turns) > 0]
    copies = set(near_duplicates(train, held)) if near_duplicates and train and held else set()
    by_domain: dict[str, list[Trajectory]] = {}
    left_out = 0
    for traj in held:
        if traj.id in copies or (turn_key and any(turn_key(t) in seen for t in traj.turns)):
            left_out += 1
            continue
        by_domain.setdefault(traj.domain, []).append(traj)
    written = {}
    for domain, trajs in sorted(by_domain.items()):
        trajs.sort(key=lambda t: t.id)  # file order independent of completion order
        path = bench_dir / f"{domain}_test.jsonl"
        written[str(path)] = write_jsonl(path, trajectories_to_samples(trajs, policy=policy))
    return written, left_out


def _call(run_one: RunOne, job: EpisodeJob) -> Trajectory:
    result = run_one(job)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    if not isinstance(result, Trajectory):
        raise TypeError(f"run_one returned {type(result).__name__}, expected a Trajectory")
    return result


async def _await(aw: Any) -> Any:
    return await aw


def _stamp(traj: Trajectory, job: EpisodeJob) -> Trajectory:
    """Record the job id, split, seed and task in the provenance (the resume key)."""
    prov = traj.provenance.model_dump()
    prov.update(job_id=job.job_id, split=job.split)
    if job.split_by is not None:
        prov["split_by"] = job.split_by
    for key, value in (("seed", job.seed), ("task", job.task)):
        if prov.get(key) is None:
            prov[key] = value
    traj.provenance = Provenance.model_validate(prov)
    return traj


def _job_id(traj: Trajectory) -> str:
    return traj.provenance.job_id or traj.id


class _Progress:
    """The shared rich bar (done/total, elapsed, ETA, failures), or nothing."""

    def __init__(self, show: bool, desc: str, total: int, completed: int):
        self.show, self.desc, self.total, self.completed = show, desc, total, completed

    def __enter__(self) -> _Progress:
        if self.show:
            from agentworld.progress import progress  # lazy: rich loads only when a bar is shown

            self.bar = progress()
            self.bar.__enter__()
            self.task = self.bar.add_task(self.desc, total=self.total, completed=self.completed)
        return self

    def advance(self, failed: int) -> None:
        if self.show:
            label = f"{self.desc} ({failed} failed)" if failed else self.desc
            self.bar.update(self.task, advance=1, description=label)

    def __exit__(self, *exc: object) -> None:
        if self.show:
            self.bar.__exit__(*exc)  # type: ignore[arg-type]
