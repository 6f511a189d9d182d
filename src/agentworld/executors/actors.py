"""A local model backend (``hf``, ``smol``) served by Ray actors: one per GPU, or per CPU slot.

:class:`ActorBackend` is a :class:`~agentworld.models.base.Backend` like any other, so the
runner (cache, demonstrations, parsing, settings), ``bench infer`` and ``bench judge``
use it unchanged and the driver keeps writing the same resumable files. Each actor loads
the model once; a call goes to the actor with the fewest calls in flight, and the calls
an actor holds at once reach its backend together, which batches them as it does in one
process. An actor that dies is restarted by Ray and its calls are retried there, so a
lost worker costs time, not predictions.
"""

from __future__ import annotations

from typing import Any

from agentworld.executors.config import ExecutorConfig, cluster_slots, connect
from agentworld.models import backend_class, load_demos
from agentworld.models.base import Backend, Completion, GenerationConfig, Message
from agentworld.models.spec import BackendSpec

ACTOR_BACKENDS = ("hf", "smol")
"""Backends that hold a model in the process: these run in actors. Endpoint backends
(``openai``) already scale by concurrency; ``retrieval`` is an index lookup."""

RESTARTS = 2
"""Times Ray restarts a dead actor (reloading its model) and retries the calls it held."""


class _ModelActor:
    """Runs in a Ray worker: one backend, built from the spec without the runner's options."""

    def __init__(self, spec: BackendSpec):
        self.backend = backend_class(spec.name)(**spec.backend_kwargs())

    def info(self) -> tuple[str, str]:
        return self.backend.name, self.backend.model_id

    def pid(self) -> int:
        import os

        return os.getpid()

    async def complete(self, messages: list[Message], config: GenerationConfig, domain: str | None) -> list[Completion]:
        return await self.backend.complete(messages, config, domain=domain)


class ActorBackend(Backend):
    """Calls routed to model actors on a Ray cluster (build with :meth:`start`)."""

    def __init__(self, ray: Any, actors: list[Any], name: str, model_id: str, started: bool):
        self._ray, self.actors, self.name, self._model_id, self._started = ray, actors, name, model_id, started
        self._in_flight = [0] * len(actors)

    @classmethod
    def start(cls, spec: BackendSpec, config: ExecutorConfig) -> ActorBackend:
        """Connect, start the actors (each loads the model) and wait until they are ready."""
        demos = load_demos(spec)  # a bad demo source fails before any model loads
        ray, started = connect(config)
        slots, gpu = cluster_slots(ray, config)
        opts: dict[str, Any] = {**config.resources(), "max_restarts": RESTARTS, "max_task_retries": RESTARTS}
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
        backend = cls(ray, actors, infos[0][0], infos[0][1], started)
        backend.demos = demos
        return backend

    @property
    def model_id(self) -> str:
        return self._model_id

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        i = min(range(len(self.actors)), key=self._in_flight.__getitem__)
        self._in_flight[i] += 1
        from ray.exceptions import RayTaskError

        try:
            return await self.actors[i].complete.remote(messages, config, domain)
        except RayTaskError as exc:
            # The backend's own error (recorded on the prediction), not Ray's wrapper.
            raise (exc.cause if isinstance(exc.cause, Exception) else exc) from None
        finally:
            self._in_flight[i] -= 1

    async def aclose(self) -> None:
        for a in self.actors:
            self._ray.kill(a)
        self.actors = []
        if self._started:
            self._ray.shutdown()
