"""One entry point for the three dataset builders: resolve a builder's config and run it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.data.config import BUILDERS

Progress = Callable[[str, int, "int | None"], None]
"""(stage, items done since the last call, the stage's total when known)."""


def load_build_config(kind: str, path: Path | None = None, overrides: dict[str, Any] | None = None) -> Any:
    """The ``kind`` (cpt, sft, rl) builder's config from a YAML file, or from its defaults,
    ``overrides`` winning. A missing file is a FileNotFoundError, a bad key or value a
    :class:`~agentworld.config.ConfigError`."""
    cls = BUILDERS[kind]
    if path is None:
        return cls.from_overrides(overrides or {})
    if not path.exists():
        raise FileNotFoundError(f"no such config file: {path}")
    return cls.from_yaml(path, overrides)


def build_dataset(kind: str, config: Any, *, progress: Progress | None = None, restart: bool = False) -> Any:
    """Run the ``kind`` builder on ``config``; its report (``to_dict()`` for the figures).
    The builder's module loads here: it needs the optional training dependencies."""
    import agentworld.data  # its builders load on first use

    builder = getattr(agentworld.data, f"build_{kind}")
    return builder(config, progress=progress, restart=restart)
