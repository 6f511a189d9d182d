"""``WorldModel``: the one way bench, sim and data call a backend.

It merges generation settings (library defaults < the model's defaults < per call),
answers from the response cache where it can, calls the backend for the rest under a
concurrency limit, parses the output contract, times every call and turns failures into
predictions with ``error`` set -- a failed call never raises. The one exception is a
strict-replay cache miss, which is a configuration error and raises :class:`CacheMiss`.

Callers pass the request's ``domain`` when they know it (``predict_sample`` takes the
sample's, the simulator its environment's); it reaches the backend and, with
demonstrations on (``demos=K`` in the backend spec, :mod:`agentworld.models.demos`),
picks the train-split turns put into the context. Demonstrations are added here, once,
for every backend.

Backends that render their own prompt (``hf``, ``llamacpp``, ``smol``: a ``complete_block``
method) are asked for the output contract itself: the answer is forced to open with the
observation block and stops at its close (:mod:`agentworld.models.contract`). Other
callers of those backends (agent policies, judges) call ``complete`` and get free text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agentworld.models.base import Backend, Completion, GenerationConfig, Message, Prediction
from agentworld.models.bounded import as_completed_bounded
from agentworld.models.cache import CacheMiss, ResponseCache, cache_key
from agentworld.models.contract import OBSERVATION_BLOCK
from agentworld.parsing import parse_prediction, with_finish_reason

if TYPE_CHECKING:
    from agentworld.models.demos import Demonstrations
    from agentworld.records.bench import BenchSample

__all__ = ["CacheMiss", "RunnerStats", "WorldModel", "to_prediction"]


@dataclass
class RunnerStats:
    """Counters of one WorldModel, for reports and for checking the concurrency limit."""

    calls: int = 0
    failures: int = 0
    cached_samples: int = 0
    live_samples: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def to_prediction(
    completion: Completion, *, index: int, latency_s: float, backend: str, model: str, cached: bool = False
) -> Prediction:
    parsed = parse_prediction(completion.text, reasoning=completion.reasoning)
    extra: dict[str, str] = {}
    if completion.finish_reason:
        extra["finish_reason"] = completion.finish_reason
    if completion.reasoning:
        # Kept apart so a cached prediction re-parses exactly like the live one.
        extra["server_reasoning"] = completion.reasoning
    return Prediction(
        text=completion.text,
        observation=parsed.observation,
        reasoning=parsed.reasoning,
        status=with_finish_reason(parsed.status, completion.finish_reason),
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_s=latency_s,
        sample_index=index,
        cached=cached,
        backend=backend,
        model=model,
        extra=extra,
    )


def sample_trajectory(sample: BenchSample) -> str:
    """The id of the trajectory a sample evaluates: its ``trajectory_id`` key, else its
    id without the ``:TURN`` suffix (``make_sample`` writes ``TRAJ:TURN``)."""
    return sample.trajectory


class WorldModel:
    """A backend plus cache, default settings and a concurrency limit."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        concurrency: int = 4,
        defaults: GenerationConfig | None = None,
        demos: Demonstrations | None = None,
    ):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.backend = backend
        # A spec's demos=K travels on the backend load_backend built from it, so every
        # command that builds a WorldModel from a spec honours it.
        self.demos = demos if demos is not None else getattr(backend, "demos", None)
        self.cache = cache
        self.concurrency = concurrency
        self.defaults = defaults or GenerationConfig()
        self.stats = RunnerStats()
        # A semaphore belongs to one event loop; predict_sync runs a fresh loop per call.
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def _forces_block(self) -> bool:
        return callable(getattr(self.backend, "complete_block", None))

    def settings(self, config: GenerationConfig | None = None) -> GenerationConfig:
        """The resolved settings a call with ``config`` uses."""
        return self.defaults.merged(config).resolved()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem, self._sem_loop = asyncio.Semaphore(self.concurrency), loop
        return self._sem

    async def predict(
        self,
        messages: list[Message],
        config: GenerationConfig | None = None,
        *,
        domain: str | None = None,
        exclude_trajectory: str | None = None,
    ) -> list[Prediction]:
        """``n`` predictions of the observation answering the last user message.

        ``domain`` is the request's domain, passed to the backend and used to choose
        demonstrations; ``exclude_trajectory`` is a trajectory id no demonstration may
        come from (the sample's own)."""
        cfg = self.settings(config)
        n = cfg.n or 1
        backend, model = self.backend.name, self.backend.model_id
        context: dict[str, object] = {"domain": domain} if domain else {}
        if self.demos is not None and self.demos.settings.k > 0:
            if domain is None:
                error = (f"demos={self.demos.settings.k} needs the request's domain: pass domain= to "
                         "WorldModel.predict (predict_sample and the simulator pass it)")
                self.stats.failures += 1
                return [Prediction(error=error, sample_index=i, backend=backend, model=model) for i in range(n)]
            # Index lookups are CPU work: off the event loop.
            messages = await asyncio.to_thread(
                self.demos.apply, messages, domain, exclude_trajectory=exclude_trajectory
            )
            context |= self.demos.cache_tag
        if self._forces_block:  # a forced answer differs from a free one: never the same cache entry
            context["answer"] = OBSERVATION_BLOCK.open
        keys = [cache_key(backend, model, messages, cfg, i, context) for i in range(n)]
        out: list[Prediction | None] = [None] * n
        if self.cache is not None and self.cache.enabled:
            for i, key in enumerate(keys):
                hit = self.cache.get(key)  # raises CacheMiss in strict replay
                if hit is not None:
                    completion, latency = hit
                    out[i] = to_prediction(
                        completion, index=i, latency_s=latency, backend=backend, model=model, cached=True
                    )
        missing = [i for i, p in enumerate(out) if p is None]
        self.stats.cached_samples += n - len(missing)
        if missing:
            if cfg.seed is None:
                live = await self._live(messages, replace(cfg, n=len(missing)), missing, domain)
            else:
                # Seeded samples are a sequence: sample i is only reproduced by asking for
                # all of them, so a partial hit still regenerates the full n.
                live = [
                    p for p in await self._live(messages, cfg, list(range(n)), domain) if p.sample_index in missing
                ]
            for i, pred in zip(missing, live, strict=True):
                out[i] = pred
                if pred.error is None and self.cache is not None:
                    completion = Completion(
                        text=pred.text,
                        reasoning=pred.extra.get("server_reasoning"),
                        prompt_tokens=pred.prompt_tokens,
                        completion_tokens=pred.completion_tokens,
                        finish_reason=pred.extra.get("finish_reason"),
                    )
                    self.cache.put(keys[i], completion, backend=backend, model=model, latency_s=pred.latency_s)
        return [p for p in out if p is not None]

    async def _live(
        self, messages: list[Message], cfg: GenerationConfig, indices: list[int], domain: str | None
    ) -> list[Prediction]:
        backend, model = self.backend.name, self.backend.model_id
        async with self._semaphore():
            st = self.stats
            st.calls += 1
            st.in_flight += 1
            st.peak_in_flight = max(st.peak_in_flight, st.in_flight)
            start = time.perf_counter()
            try:
                if self._forces_block:
                    completions = await self.backend.complete_block(  # type: ignore[attr-defined]
                        messages, cfg, OBSERVATION_BLOCK, domain=domain)
                else:
                    completions = await self.backend.complete(messages, cfg, domain=domain)
                error = None
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as exc:  # any backend failure becomes an error prediction
                completions, error = [], f"{type(exc).__name__}: {exc}"
            finally:
                st.in_flight -= 1
            latency = time.perf_counter() - start
        if error is None and len(completions) < len(indices):
            error = f"backend returned {len(completions)} completions, expected {len(indices)}"
        if error is not None:
            st.failures += 1
            return [
                Prediction(error=error, latency_s=latency, sample_index=i, backend=backend, model=model)
                for i in indices
            ]
        st.live_samples += len(indices)
        preds = []
        # A backend may return more completions than asked for (checked above): extras are dropped.
        for i, c in zip(indices, completions, strict=False):
            st.prompt_tokens += c.prompt_tokens or 0
            st.completion_tokens += c.completion_tokens or 0
            preds.append(to_prediction(c, index=i, latency_s=latency, backend=backend, model=model))
        return preds

    async def predict_sample(self, sample: BenchSample, config: GenerationConfig | None = None) -> list[Prediction]:
        """Predictions for a benchmark sample (its ``system_str`` is used verbatim), in
        its domain; demonstrations never come from its own trajectory."""
        from agentworld.prompts import sample_messages

        return await self.predict(
            sample_messages(sample), config, domain=sample.domain, exclude_trajectory=sample_trajectory(sample)
        )

    def predict_sync(
        self,
        messages: list[Message],
        config: GenerationConfig | None = None,
        *,
        domain: str | None = None,
        exclude_trajectory: str | None = None,
    ) -> list[Prediction]:
        """:meth:`predict` for scripts without an event loop."""
        return asyncio.run(self.predict(messages, config, domain=domain, exclude_trajectory=exclude_trajectory))

    async def map_samples(
        self, samples: Sequence[BenchSample], config: GenerationConfig | None = None
    ) -> AsyncIterator[tuple[int, list[Prediction]]]:
        """:meth:`predict_sample` for every sample; yield ``(index, predictions)`` as each
        finishes, at most ``concurrency`` backend calls at once (tasks start lazily, so a
        huge list does not create a huge number of pending tasks)."""
        async def one(idx: int, sample: BenchSample) -> tuple[int, list[Prediction]]:
            return idx, await self.predict_sample(sample, config)

        # Twice the concurrency: the next calls are queued on the semaphore, ready to go.
        results = as_completed_bounded((one(i, s) for i, s in enumerate(samples)), self.concurrency * 2)
        async with aclosing(results):
            async for item in results:
                yield item

    async def map(
        self, requests: Sequence[list[Message]], config: GenerationConfig | None = None, *, domain: str | None = None
    ) -> AsyncIterator[tuple[int, list[Prediction]]]:
        """Predict for every message list (all of ``domain``); yield ``(index,
        predictions)`` as each finishes, bounded like :meth:`map_samples`."""
        async def one(idx: int, msgs: list[Message]) -> tuple[int, list[Prediction]]:
            return idx, await self.predict(msgs, config, domain=domain)

        results = as_completed_bounded((one(i, msgs) for i, msgs in enumerate(requests)), self.concurrency * 2)
        async with aclosing(results):
            async for item in results:
                yield item

    async def aclose(self) -> None:
        await self.backend.aclose()
        if self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> WorldModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

