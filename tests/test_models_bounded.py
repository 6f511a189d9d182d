"""as_completed_bounded: every result, few live tasks, lazy coroutines, cancellation on exit."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from agentworld.models.bounded import as_completed_bounded


class _Jobs:
    """Coroutines that count how many exist and run at once; job ``fail`` raises."""

    def __init__(self, n: int, fail: int | None = None, block: bool = False):
        self.n, self.fail, self.block = n, fail, block
        self.created = self.running = self.peak = 0
        self.cancelled = 0

    async def _job(self, i: int) -> int:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(0 if not self.block or i == 0 else 3600)
            if i == self.fail:
                raise RuntimeError(f"job {i}")
            return i
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1

    def __iter__(self):
        for i in range(self.n):
            self.created += 1
            yield self._job(i)


async def _collect(jobs: _Jobs, limit: int) -> list[int]:
    out = []
    async for r in as_completed_bounded(jobs, limit):
        # Coroutines are made only when there is room for them.
        assert jobs.created <= len(out) + limit + 1
        out.append(r)
    return out


def test_every_result_arrives_with_at_most_limit_tasks_alive() -> None:
    jobs = _Jobs(50)
    assert sorted(asyncio.run(_collect(jobs, 4))) == list(range(50))
    assert jobs.peak <= 4 and jobs.created == 50


def test_an_error_ends_the_run_and_cancels_what_is_pending() -> None:
    jobs = _Jobs(20, fail=0, block=True)
    with pytest.raises(RuntimeError, match="job 0"):
        asyncio.run(_collect(jobs, 3))
    assert jobs.created == 3 and jobs.cancelled == 2


def test_leaving_early_cancels_the_pending_tasks() -> None:
    async def first(jobs: _Jobs) -> int:
        results = as_completed_bounded(jobs, 5)
        async with aclosing(results):
            async for r in results:
                return r
        raise AssertionError("no result")

    jobs = _Jobs(100, block=True)
    assert asyncio.run(first(jobs)) == 0
    assert jobs.created == 5 and jobs.cancelled == 4 and jobs.running == 0


def test_limit_must_be_positive() -> None:
    async def run() -> None:
        async for _ in as_completed_bounded([], 0):
            pass

    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(run())
