"""Pools that run collection episodes: worker threads here, or Ray tasks on a cluster.

Both have the same small surface, which is all :func:`agentworld.envs.collect.run_collection`
needs: ``submit`` one episode, ``wait`` for some to finish, ``result`` of one (raising the
episode's own exception), ``cancel`` the rest. The driver stays the only writer of the
output files, so a killed driver or a lost node loses only the episodes in flight.

On Ray each episode is a task reserving ``num_cpus`` and ``memory``. Before the first
episode a probe task runs on every node and calls the environment's prerequisite check
there; a node that fails it is reported (:attr:`EpisodePool.notes`) and gets no
episodes. Nodes that join later are probed when first seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol

from agentworld.executors.config import ExecutorConfig, ExecutorUnavailable, cluster_slots, ray_session

Prereq = Callable[[], list[str]]
"""An environment's prerequisite check, run on each node: the problems found (empty: ready)."""

RESCAN_S = 10.0
"""How often the Ray pool looks for nodes that joined (or left) the cluster."""


class EpisodePool(Protocol):
    capacity: int
    notes: list[str]

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...
    def wait(self, handles: Iterable[Any]) -> list[Any]: ...
    def result(self, handle: Any) -> Any: ...
    def cancel(self, handles: Iterable[Any]) -> None: ...


class ThreadPool:
    """Episodes on worker threads of this process (the local executor)."""

    def __init__(self, pool: ThreadPoolExecutor, workers: int):
        self._pool, self.capacity, self.notes = pool, workers, []

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        return self._pool.submit(fn, *args)

    def wait(self, handles: Iterable[Future[Any]]) -> list[Future[Any]]:
        return list(wait(list(handles), return_when=FIRST_COMPLETED)[0])

    def result(self, handle: Future[Any]) -> Any:
        return handle.result()

    def cancel(self, handles: Iterable[Future[Any]]) -> None:
        for fut in handles:
            fut.cancel()


def _probe(prereq: Prereq | None) -> tuple[str, list[str]]:
    """Runs on a node: its id and what it lacks."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    return node, (prereq() if prereq is not None else [])


class RayPool:
    """Episodes as Ray tasks, only on nodes that pass the prerequisite check."""

    def __init__(self, ray: Any, config: ExecutorConfig, prereq: Prereq | None):
        self._ray, self._config, self._prereq = ray, config, prereq
        self.capacity = cluster_slots(ray, config)[0]
        self.notes: list[str] = []
        self._ok: set[str] = set()
        self._bad: set[str] = set()
        self._load: dict[str, int] = {}
        self._node_of: dict[Any, str | None] = {}
        self._scanned = 0.0
        self._remote = ray.remote(_run_remote)
        self._scan()
        if not self._ok:
            raise ExecutorUnavailable("no Ray node has this environment's prerequisites:\n  " + "\n  ".join(self.notes),
                                      "install them on the nodes (scripts/setup.sh), or run with --executor local")

    def _alive(self) -> set[str]:
        return {n["NodeID"] for n in self._ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0}

    def _scan(self) -> None:
        """Probe nodes not seen before; forget nodes that left."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._scanned = time.monotonic()
        alive = self._alive()
        self._ok &= alive
        new = sorted(alive - self._ok - self._bad)
        refs = [self._ray.remote(_probe).options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False))
                .remote(self._prereq) for n in new]
        for node, ref in zip(new, refs, strict=True):
            try:
                _, problems = self._ray.get(ref, timeout=300)
            except Exception as exc:  # noqa: BLE001 - a node whose probe fails is reported like one that lacks a prerequisite
                problems = [f"the prerequisite probe failed: {type(exc).__name__}: {exc}"]
            if problems:
                self._bad.add(node)
                self.notes.append(f"node {node[:12]} has no episodes: {'; '.join(problems)}")
            else:
                self._ok.add(node)
                self._load.setdefault(node, 0)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        if time.monotonic() - self._scanned > RESCAN_S:
            self._scan()
        opts = {**self._config.resources(), "max_retries": self._config.max_retries, "retry_exceptions": False}
        node = None
        if self._bad and not self._ok:
            raise ExecutorUnavailable("every Ray node with this environment's prerequisites has left the cluster",
                                      "add nodes, then run the same command again: it resumes")
        if self._bad:
            # Some node lacks the prerequisites: pin each episode to the least loaded node that has them.
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            node = min(sorted(self._ok), key=lambda n: self._load.get(n, 0))
            self._load[node] = self._load.get(node, 0) + 1
            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        ref = self._remote.options(**opts).remote(fn, *args)
        self._node_of[ref] = node
        return ref

    def wait(self, handles: Iterable[Any]) -> list[Any]:
        refs = list(handles)
        done, _ = self._ray.wait(refs, num_returns=1)
        # Whatever else finished meanwhile comes back too: fewer round trips.
        more, _ = self._ray.wait([r for r in refs if r not in done], num_returns=len(refs) - len(done), timeout=0)
        for ref in [*done, *more]:
            if (node := self._node_of.pop(ref, None)) is not None:
                self._load[node] = max(0, self._load.get(node, 1) - 1)
        return [*done, *more]

    def result(self, handle: Any) -> Any:
        from ray.exceptions import RayTaskError

        try:
            return self._ray.get(handle)
        except RayTaskError as exc:
            raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None

    def cancel(self, handles: Iterable[Any]) -> None:
        # Not forced: the episode gets a KeyboardInterrupt and tears its sandbox down.
        for ref in handles:
            self._ray.cancel(ref)


def _run_remote(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@contextmanager
def episode_pool(executor: ExecutorConfig | None, workers: int, prereq: Prereq | None = None) -> Iterator[EpisodePool]:
    """The pool collection runs on: ``workers`` threads locally; on Ray, tasks on every
    node that passes ``prereq``, as many in flight as the executor's ``workers`` or the
    cluster's CPU slots."""
    if executor is None or not executor.is_ray:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="collect") as pool:
            yield ThreadPool(pool, max(1, workers))
        return
    with ray_session(executor) as ray:
        yield RayPool(ray, executor, prereq)
