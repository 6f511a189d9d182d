"""World-model backends behind one interface, the runner that calls them, and the cache.

A backend is named by one spec string, ``[LABEL=]BACKEND[:TARGET][@URL][,KEY=VALUE...]``
(``smol``, ``hf:ckpt/``, ``retrieval:trajs.jsonl``, ``openai:qwen3@http://h:8000/v1``), parsed
by :func:`parse_backend_spec`; ``load_backend(spec, **options)`` builds it. Backends import
their heavy dependencies (torch, transformers) only when they are built::

    from agentworld.models import WorldModel, ResponseCache, load_backend

    wm = WorldModel(load_backend("smol"), cache=ResponseCache("runs/cache.sqlite"))
    [pred] = wm.predict_sync(messages)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from agentworld.models.spec import KINDS, BackendSpec, BackendSpecError, parse_backend_spec

if TYPE_CHECKING:
    from agentworld.models.demos import Demonstrations

# name -> "module:Class"; imported on first use so the core needs no torch.
BACKENDS: dict[str, str] = {name: kind.impl for name, kind in KINDS.items()}


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


def load_backend(spec: BackendSpec | str, **options: Any) -> Backend:
    """Build the backend a spec names (``"smol"``, ``"openai:m@url"``, a parsed
    :class:`BackendSpec`); ``options`` are typed extra options (``None`` means unset).
    A bad spec or option raises :class:`BackendSpecError` (a ``ValueError``)."""
    parsed = parse_backend_spec(spec, {k: v for k, v in options.items() if v is not None}, allow_label=True)
    # Loaded first: a bad demo source fails before a model takes seconds to load.
    demos = load_demos(parsed)
    backend = backend_class(parsed.name)(**parsed.backend_kwargs())
    backend.demos = demos
    return backend


def load_demos(parsed: BackendSpec) -> Demonstrations | None:
    """The demonstrations a spec's ``demos=K`` asks for (the runner applies them), or None."""
    runner = parsed.runner_options()
    k = runner.get("demos", 0)
    if k < 0:
        raise BackendSpecError(f"demos={k}: the number of demonstrations must be 0 or more")
    if not k:
        return None
    from agentworld.models.demos import Demonstrations, DemoSettings

    return Demonstrations.load(DemoSettings(k, runner.get("demo_source")))


__all__ = [
    "BACKENDS",
    "KINDS",
    "BackendSpec",
    "BackendSpecError",
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
    "load_demos",
    "parse_backend_spec",
]
