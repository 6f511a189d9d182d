"""The collection runner: bounded workers, resume by job id, failures kept, bench samples."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agentworld.envs.collect import EpisodeJob, failures_path, run_collection
from agentworld.envs.sandbox import Sandbox, ensure_rootfs
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import Provenance, Trajectory, Turn, read_trajectories


class ShellEpisodes:
    """Records ``echo`` commands run in a real sandbox; jobs listed in ``broken`` raise once."""

    def __init__(self, broken: set[str] = frozenset()):
        self.rootfs = ensure_rootfs()
        self.broken = set(broken)
        self.calls: list[str] = []
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, job: EpisodeJob) -> Trajectory:
        with self.lock:
            self.calls.append(job.job_id)
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            if job.job_id in self.broken:
                self.broken.discard(job.job_id)
                raise RuntimeError(f"sandbox crashed in {job.job_id}")
            turns = []
            with Sandbox(rootfs=self.rootfs) as sb:
                for k in range(job.params["turns"]):
                    cmd = f"echo {job.seed}-{k}"
                    turns.append(Turn(action=cmd, observation=sb.run(cmd).stdout))
            return Trajectory(id=f"t{job.seed}", domain="terminal", turns=turns,
                              provenance=Provenance(source="real"))
        finally:
            with self.lock:
                self.active -= 1


def _jobs(n: int, turns: int = 7) -> list[EpisodeJob]:
    return [EpisodeJob(f"job-{i}", seed=i, split="test" if i % 2 else "train", task="echo",
                       params={"turns": turns}) for i in range(n)]


def test_collects_resumes_and_records_failures(tmp_path: Path) -> None:
    out = tmp_path / "traj.jsonl"
    run = ShellEpisodes(broken={"job-3"})
    rep = run_collection(_jobs(6), run, out=out, workers=2, bench_dir=tmp_path / "bench", show_progress=False)
    assert (rep.total, rep.done, rep.failed, rep.skipped) == (6, 5, 1, 0)
    assert rep.failures[0][0] == "job-3" and "sandbox crashed" in rep.failures[0][1]
    fail = [json.loads(x) for x in failures_path(out).read_text().splitlines()]
    assert fail[0]["job_id"] == "job-3" and "RuntimeError" in fail[0]["traceback"]
    assert 1 <= run.peak <= 2

    trajs = read_trajectories(out).items
    assert trajs[0].turns[1].observation == f"{trajs[0].provenance.seed}-1\n"
    assert {t.provenance.job_id for t in trajs} == {"job-0", "job-1", "job-2", "job-4", "job-5"}

    # Resume: only the failed job runs again.
    run.calls.clear()
    rep2 = run_collection(_jobs(6), run, out=out, workers=2, bench_dir=tmp_path / "bench", show_progress=False)
    assert run.calls == ["job-3"] and (rep2.done, rep2.skipped, rep2.failed) == (1, 5, 0)

    bench = load_bench_dir(tmp_path / "bench", strict=True).samples
    # 3 held-out trajectories of 7 turns, first + last + 3 middle turns each.
    assert len(bench) == 15
    assert sorted({s.turn_idx for s in bench}) == [1, 3, 4, 5, 7]
    assert {s.trajectory_id for s in bench} == {"t1", "t3", "t5"}


def test_torn_last_line_is_repaired_and_rerun(tmp_path: Path) -> None:
    out = tmp_path / "traj.jsonl"
    run = ShellEpisodes()
    run_collection(_jobs(2, turns=1), run, out=out, workers=1, show_progress=False)
    text = out.read_text()
    out.write_text(text[: len(text) - 20])  # a run killed mid-write
    run.calls.clear()
    rep = run_collection(_jobs(2, turns=1), run, out=out, workers=1, show_progress=False)
    assert run.calls == ["job-1"] and rep.done == 1
    assert len(read_trajectories(out, strict=True)) == 2


async def _async_episode(job: EpisodeJob) -> Trajectory:
    return Trajectory(id=job.job_id, domain="terminal", turns=[Turn(action="a", observation=str(job.seed))])


def test_async_run_one_and_unique_ids(tmp_path: Path) -> None:
    rep = run_collection(_jobs(3), _async_episode, out=tmp_path / "o.jsonl", workers=3, show_progress=False)
    assert rep.done == 3
    with pytest.raises(ValueError, match="unique"):
        run_collection([EpisodeJob("a", 0), EpisodeJob("a", 1)], _async_episode, out=tmp_path / "p.jsonl")


def test_held_out_episodes_sharing_a_training_turn_stay_out_of_the_benchmark(tmp_path: Path) -> None:
    """With a turn key, a test episode that repeats a training turn is not benchmarked."""
    out = tmp_path / "traj.jsonl"
    run = ShellEpisodes()
    # Keyed by observation with digits masked: `echo 0-k` and `echo 1-k` print the "same" line.
    key = lambda t: "".join("0" if c.isdigit() else c for c in t.observation)  # noqa: E731
    rep = run_collection(_jobs(2, turns=3), run, out=out, bench_dir=tmp_path / "bench", show_progress=False,
                         turn_key=key)
    assert rep.done == 2 and rep.bench_left_out == 1 and not any(rep.bench_files.values())
    rep = run_collection(_jobs(2, turns=3), run, out=out, bench_dir=tmp_path / "b2", show_progress=False)
    assert rep.bench_left_out == 0 and sum(rep.bench_files.values()) == 3


def test_held_out_episodes_that_nearly_copy_training_stay_out_of_the_benchmark(tmp_path: Path) -> None:
    """The near-duplicate check sees the training and held-out trajectories; the ids it
    names are left out of the benchmark, the others are written."""
    from agentworld.data.split import check_leakage

    out = tmp_path / "traj.jsonl"
    seen: list[tuple[int, int]] = []

    def near(train: list, held: list) -> list[str]:
        seen.append((len(train), len(held)))
        return [test_id for test_id, _, _ in check_leakage(train, held, near_duplicate=0.5).near_duplicates]

    rep = run_collection(_jobs(2, turns=3), ShellEpisodes(), out=out, bench_dir=tmp_path / "bench",
                         show_progress=False, near_duplicates=near)
    assert seen == [(1, 1)]
    assert rep.done == 2 and rep.bench_left_out == 1 and not any(rep.bench_files.values())
    rep = run_collection(_jobs(2, turns=3), ShellEpisodes(), out=out, bench_dir=tmp_path / "b2",
                         show_progress=False, near_duplicates=lambda train, held: [])
    assert rep.bench_left_out == 0 and sum(rep.bench_files.values()) == 3
