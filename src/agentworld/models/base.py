"""The one interface every world-model backend implements, and what it returns.

A backend implements a single async method, :meth:`Backend.complete`: chat messages and
generation settings in, ``n`` raw completions out. Everything shared -- parsing the
output contract, the response cache, concurrency limits, error capture, timing -- sits
in :mod:`agentworld.models.runner` so that bench, sim and data use every backend the same
way.
"""

from __future__ import annotations

import abc
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from agentworld.records.prediction import Prediction as Prediction  # the record type, re-exported

if TYPE_CHECKING:
    from agentworld.models.demos import Demonstrations

Message = dict[str, str]


@dataclass(frozen=True)
class GenerationConfig:
    """Sampling settings. ``None`` means "not set here": layers merge with :meth:`merged`
    (defaults < config file < CLI flags < per-call), later non-None values winning."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    seed: int | None = None
    n: int | None = None
    stop: tuple[str, ...] | None = None

    def merged(self, other: GenerationConfig | None) -> GenerationConfig:
        if other is None:
            return self
        return replace(self, **{f.name: v for f in fields(other) if (v := getattr(other, f.name)) is not None})

    def resolved(self) -> GenerationConfig:
        """With the library defaults filled in for everything still unset."""
        return DEFAULT_GENERATION.merged(self)

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v is not None}


# No top_p or seed: a served model keeps its own defaults unless the user sets them (the
# local backends read an unset top_p as 1.0).
DEFAULT_GENERATION = GenerationConfig(temperature=0.0, max_tokens=1024, n=1)


@dataclass
class Completion:
    """One raw completion as a backend returns it, before parsing."""

    text: str
    reasoning: str | None = None
    """Reasoning the server split out (``reasoning_content``), if any."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class BackendError(RuntimeError):
    """A call failed for good (after the backend's own retries)."""


class Backend(abc.ABC):
    """A world-model backend. Subclasses implement :meth:`complete` only."""

    #: registry name: ``openai``, ``hf``, ``smol``, ``retrieval``
    name: str = ""
    #: set by ``load_backend`` from the spec's ``demos=K``; the runner applies them
    demos: Demonstrations | None = None

    @property
    @abc.abstractmethod
    def model_id(self) -> str:
        """Model name plus revision (checkpoint hash, adapter hash...) for cache keys."""

    @abc.abstractmethod
    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        """Return ``config.n`` completions for ``messages``; raise BackendError on failure.

        ``domain`` is the caller's domain (``terminal``, ``mcp``...) when it knows one: a
        benchmark sample's, a simulated environment's. Model backends read the domain from
        the prompt and may ignore it; backends that cannot (retrieval) rely on it.
        """

    async def aclose(self) -> None:  # noqa: B027 - an optional hook: backends that hold nothing need not override it
        """Release clients, models, threads."""
