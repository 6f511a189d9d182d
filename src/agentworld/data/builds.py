"""One entry point for the three dataset builders: resolve a builder's config and run it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld.data.config import BUILDERS
from agentworld.executors.config import ExecutorConfig, ExecutorUnavailable

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


def build_dataset(kind: str, config: Any, *, progress: Progress | None = None, restart: bool = False,
                  executor: ExecutorConfig | None = None) -> Any:
    """Run the ``kind`` builder on ``config``; its report (``to_dict()`` for the figures).
    The builder's module loads here: it needs the optional training dependencies.

    With a Ray ``executor`` the CPT builder's masking and tokenizing chunks run in Ray Data
    (filters, the split and packing stay here: they compare or order the whole set); the
    dataset written is the same, byte for byte. SFT and RL spend their time in model calls
    and tokenizer lookups per trajectory: they run here."""
    import agentworld.data  # its builders load on first use

    builder = getattr(agentworld.data, f"build_{kind}")
    if executor is None or not executor.is_ray:
        return builder(config, progress=progress, restart=restart)
    if kind != "cpt":
        raise ExecutorUnavailable(f"--executor ray builds cpt datasets; {kind} runs in this process",
                                  "drop --executor ray")
    from agentworld.executors.config import ray_session
    from agentworld.executors.data import ray_map

    with ray_session(executor) as ray:
        return builder(config, progress=progress, restart=restart, mapper=ray_map(ray, executor))
