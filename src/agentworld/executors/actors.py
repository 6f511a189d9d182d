"""A local model backend (``hf``, ``smol``) served by Ray actors: one per GPU, or per CPU slot.

:class:`ActorBackend` is a :class:`~agentworld.models.base.Backend` like any other, so the
runner (cache, demonstrations, parsing, settings), ``bench infer`` and ``bench judge``
use it unchanged and the driver keeps writing the same resumable files. Each actor loads
the model once; a call goes to the actor with the fewest calls in flight, and the calls
an actor holds at once reach its backend together, which batches them as it does in one
process.

A lost actor (its worker or its whole node gone) costs time, not predictions, and never
a hang: its calls are retried here on the actors still alive, not left queued for a
restart that may never come (a lost node's actor waits for room the surviving actors
hold). Ray restarts the actor where it can; a probe puts it back into routing once it
answers. With every actor lost, calls wait up to ``lost_wait_s`` for one to come back,
then fail -- recorded as failed predictions that ``--retry-failed`` asks again -- so
the run ends.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentworld.executors.config import ExecutorConfig, cluster_slots, connect
from agentworld.models import backend_class, load_demos
from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message
from agentworld.models.contract import AnswerBlock
from agentworld.models.spec import BackendSpec

ACTOR_BACKENDS = ("hf", "smol")
"""Backends that hold a model in the process: these run in actors. Endpoint backends
(``openai``) already scale by concurrency; ``retrieval`` is an index lookup."""

RESTARTS = 2
"""Times Ray restarts a dead actor (reloading its model). Its calls are not retried by Ray
(``max_task_retries=0``): the backend sends them to a live actor instead."""

LOST_WAIT_S = 300.0
"""How long calls wait, once every actor is lost, for one to come back before failing."""

PROBE_FIRST_S, PROBE_MAX_S = 0.5, 10.0
"""A lost actor is asked whether it is back after this long, then at doubling intervals up to the cap."""


class _ModelActor:
    """Runs in a Ray worker: one backend, built from the spec without the runner's options."""

    def __init__(self, spec: BackendSpec):
        self.backend = backend_class(spec.name)(**spec.backend_kwargs())

    def info(self) -> tuple[str, str, bool]:
        """Name, model id, and whether the backend forces answers into a block (``complete_block``)."""
        return self.backend.name, self.backend.model_id, callable(getattr(self.backend, "complete_block", None))

    def pid(self) -> int:
        import os

        return os.getpid()

    async def complete(self, messages: list[Message], config: GenerationConfig, domain: str | None,
                       block: AnswerBlock | None = None) -> list[Completion]:
        if block is None:
            return await self.backend.complete(messages, config, domain=domain)
        return await self.backend.complete_block(messages, config, block, domain=domain)


class ActorBackend(Backend):
    """Calls routed to model actors on a Ray cluster (build with :meth:`start`)."""

    def __init__(self, ray: Any, actors: list[Any], name: str, model_id: str, started: bool, *, lost_wait_s: float = LOST_WAIT_S):
        self._ray, self.actors, self.name, self._model_id, self._started = ray, actors, name, model_id, started
        self._in_flight = [0] * len(actors)
        self.lost_wait_s = lost_wait_s
        self.lost_calls = 0
        """Calls that an actor lost and that were sent again (for reports and tests)."""
        self._probes: dict[int, asyncio.Task[None]] = {}
        """Lost actors, each with the task that finds out when it is back."""
        self._all_lost_since: float | None = None
        self._back: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def start(cls, spec: BackendSpec, config: ExecutorConfig) -> ActorBackend:
        """Connect, start the actors (each loads the model) and wait until they are ready."""
        demos = load_demos(spec)  # a bad demo source fails before any model loads
        ray, started = connect(config)
        slots, gpu = cluster_slots(ray, config)
        opts: dict[str, Any] = {**config.resources(), "max_restarts": RESTARTS, "max_task_retries": 0}
        if gpu:
            opts["num_gpus"] = 1
        remote = ray.remote(_ModelActor)
        actors = [remote.options(**opts).remote(spec) for _ in range(slots)]
        try:
            infos = ray.get([a.info.remote() for a in actors])
        except Exception:
            for a in actors:
                ray.kill(a)
            if started:
                ray.shutdown()
            raise
        # A backend that forces the answer block (hf, smol) is served with complete_block
        # too, so the runner asks the actors for the same contract as the local backend.
        kind = BlockActorBackend if infos[0][2] and not issubclass(cls, BlockActorBackend) else cls
        backend = kind(ray, actors, infos[0][0], infos[0][1], started)
        backend.demos = demos
        return backend

    @property
    def model_id(self) -> str:
        return self._model_id

    def _event(self) -> asyncio.Event:
        """The "an actor is live" event of the running loop (asyncio objects belong to one loop)."""
        loop = asyncio.get_running_loop()
        if self._back is None or self._loop is not loop:
            # Probes of an earlier loop died with it: every actor is tried afresh.
            self._back, self._loop, self._probes, self._all_lost_since = asyncio.Event(), loop, {}, None
            self._back.set()
        return self._back

    def _pick(self) -> int | None:
        live = [i for i in range(len(self.actors)) if i not in self._probes]
        return min(live, key=self._in_flight.__getitem__) if live else None

    def _lose(self, i: int) -> None:
        if i in self._probes:
            return
        self._probes[i] = asyncio.get_running_loop().create_task(self._probe(i))
        if len(self._probes) == len(self.actors):
            self._all_lost_since = time.monotonic()
            self._event().clear()

    async def _probe(self, i: int) -> None:
        """Ask a lost actor until it answers (Ray restarted it), then route to it again."""
        from ray.exceptions import RayActorError

        delay = PROBE_FIRST_S
        while True:
            await asyncio.sleep(delay)
            try:
                await self.actors[i].info.remote()
            except RayActorError:
                delay = min(delay * 2, PROBE_MAX_S)
                continue
            self._probes.pop(i, None)
            self._all_lost_since = None
            self._event().set()
            return

    async def _live_actor(self) -> int:
        """A live actor to call; with none, wait for one up to ``lost_wait_s`` after the last was lost."""
        while (i := self._pick()) is None:
            since = self._all_lost_since if self._all_lost_since is not None else time.monotonic()
            left = since + self.lost_wait_s - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                await asyncio.wait_for(self._event().wait(), left)
            except TimeoutError:
                raise BackendError(
                    f"every model actor is lost (worker or node gone) and none came back within {self.lost_wait_s:.0f} s; "
                    "the call is recorded as failed: rerun with --retry-failed once the cluster has room"
                ) from None
        return i

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        return await self._call(messages, config, domain, None)

    async def _call(self, messages: list[Message], config: GenerationConfig, domain: str | None,
                    block: AnswerBlock | None) -> list[Completion]:
        from ray.exceptions import RayActorError, RayTaskError

        self._event()
        while True:
            i = await self._live_actor()
            self._in_flight[i] += 1
            try:
                return await self.actors[i].complete.remote(messages, config, domain, block)
            except RayActorError:
                # The actor is gone or restarting: this call is not lost, it goes to another.
                self.lost_calls += 1
                self._lose(i)
            except RayTaskError as exc:
                # The backend's own error (recorded on the prediction), not Ray's wrapper.
                raise (exc.cause if isinstance(exc.cause, Exception) else exc) from None
            finally:
                self._in_flight[i] -= 1

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        for task in self._probes.values():
            if task.get_loop() is loop:
                task.cancel()
        self._probes = {}
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []
        if self._started:
            self._ray.shutdown()


class BlockActorBackend(ActorBackend):
    """Model actors whose backend forces the answer into a block: ``complete_block`` as the
    local backend has it (:mod:`agentworld.models.contract`), so the runner, which forces
    the block wherever a backend offers it, gets the same answers through Ray as in one process."""

    async def complete_block(
        self, messages: list[Message], config: GenerationConfig, block: AnswerBlock, *, domain: str | None = None
    ) -> list[Completion]:
        return await self._call(messages, config, domain, block)
