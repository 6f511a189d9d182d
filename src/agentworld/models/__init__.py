"""World-model backends behind one interface, the runner that calls them, and the cache.

``load_backend(name, **options)`` builds a backend by registry name; backends import
their heavy dependencies (torch, transformers) only when they are built::

    from agentworld.models import WorldModel, ResponseCache, load_backend

    wm = WorldModel(load_backend("smol"), cache=ResponseCache("runs/cache.sqlite"))
    [pred] = wm.predict_sync(messages)
"""

from __future__ import annotations

import importlib
from typing import Any

from agentworld.models.base import (
    DEFAULT_GENERATION,
    Backend,
    BackendError,
    Completion,
    GenerationConfig,
    Message,
    Prediction,
)
from agentworld.models.cache import CacheMiss, CacheMode, ResponseCache
from agentworld.models.runner import RunnerStats, WorldModel

# name -> "module:Class"; imported on first use so the core needs no torch.
BACKENDS: dict[str, str] = {
    "openai": "agentworld.models.openai_api:OpenAIBackend",
    "hf": "agentworld.models.hf:HFBackend",
    "smol": "agentworld.models.smol:SmolBackend",
    "retrieval": "agentworld.models.retrieval:RetrievalBackend",
}


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
    module, _, cls = BACKENDS[name].partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"backend {name!r} needs an optional dependency ({exc.name}); "
            "install it with: pip install 'agentworld[local]'"
        ) from exc
    return getattr(mod, cls)


def load_backend(name: str, **options: Any) -> Backend:
    """Build a backend: ``openai``, ``hf``, ``smol`` or ``retrieval``; options go to its
    constructor (``None`` values are dropped so CLI flags can pass "unset" through)."""
    return backend_class(name)(**{k: v for k, v in options.items() if v is not None})


__all__ = [
    "BACKENDS",
    "DEFAULT_GENERATION",
    "Backend",
    "BackendError",
    "CacheMiss",
    "CacheMode",
    "Completion",
    "GenerationConfig",
    "Message",
    "Prediction",
    "ResponseCache",
    "RunnerStats",
    "WorldModel",
    "backend_class",
    "load_backend",
]
