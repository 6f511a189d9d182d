"""Run many coroutines with only a bounded number of tasks alive at once.

``WorldModel.map`` and the bench judging loop both walk long job lists: creating every
task up front would hold one pending coroutine per job, so tasks are started only as
earlier ones finish.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def as_completed_bounded(coros: Iterable[Coroutine[Any, Any, T]], limit: int) -> AsyncIterator[T]:
    """Yield the results of ``coros`` as each finishes, with at most ``limit`` tasks pending.

    ``coros`` is drawn lazily (pass a generator, and coroutines are created only when
    there is room for them). A coroutine that raises ends the iteration with its error;
    leaving early (an error, ``break`` then ``aclose()``) cancels the tasks still pending.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    pending: set[asyncio.Task[T]] = set()
    it = iter(coros)
    try:
        while True:
            while len(pending) < limit and (coro := next(it, None)) is not None:
                pending.add(asyncio.ensure_future(coro))
            if not pending:
                return
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                yield task.result()
    finally:
        for task in pending:
            task.cancel()
