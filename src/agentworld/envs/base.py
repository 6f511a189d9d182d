"""The environment contract shared by real environments and the simulator.

Gymnasium's small API with typed results: ``reset(seed=, options=)`` returns a
:class:`Reset` and ``step(action)`` returns a :class:`Step`. Both are named tuples, so
``obs, info = env.reset()`` and ``obs, reward, terminated, truncated, info = env.step(a)``
work as in Gymnasium while the fields keep their names. Actions are the text the world
model sees (JSON for structured actions), so a recorded trajectory replays as is.
"""

from __future__ import annotations

import abc
import functools
import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

from agentworld.records.trajectory import SimContext


class Reset(NamedTuple):
    observation: str
    info: dict[str, Any]


class Step(NamedTuple):
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class Env(abc.ABC):
    """A (real or simulated) environment for one domain; one episode at a time.

    The first environment created in a process sweeps up what killed runs left behind
    (sandboxes, MCP folders, server processes; see :mod:`agentworld.envs.sweep`), so a
    ``kill -9`` costs nothing past the next start, of whatever kind.
    """

    domain: str = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Env:
        from agentworld.envs.sweep import sweep_leftovers  # lazy: the sweep imports the sandbox package

        sweep_leftovers()  # cached: once per process
        return super().__new__(cls)

    @abc.abstractmethod
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        """Start a new episode (tearing down the previous one) and return the first observation."""

    @abc.abstractmethod
    def step(self, action: str) -> Step:
        """Apply one action and return what the environment shows next."""

    def context(self) -> SimContext:
        """The simulation context of the current episode (task, action space or tools,
        initial state...): what a recorded trajectory and a simulator's prompt carry."""
        return SimContext()

    def close(self) -> None:  # noqa: B027 - an optional hook: envs that hold nothing need not override it
        """Release every resource (processes, sandboxes, temp files)."""

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the episode contract, kept by every subclass ----------------------------------
    deterministic_reset: bool = False
    """Whether two ``reset`` calls with the same seed and options give the same first
    observation and context (checked by :func:`agentworld.envs.check_env`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """After a step returns ``terminated`` or ``truncated``, the next ``step`` raises
        :class:`EpisodeOver` until ``reset`` (no auto-reset). The ``step`` and ``reset``
        a subclass defines are wrapped here, so the rule has one home and no environment
        repeats it. (``close`` may be called any number of times, with or without a reset.)"""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _guard_step(cls.__dict__["step"])  # type: ignore[method-assign]
        if "reset" in cls.__dict__:
            cls.reset = _guard_reset(cls.__dict__["reset"])  # type: ignore[method-assign]

    @property
    def episode_over(self) -> bool:
        """Whether the last step ended the episode (``step`` raises until ``reset``)."""
        return bool(self.__dict__.get("_episode_over", False))


class EpisodeOver(RuntimeError):
    """``step`` after the episode terminated or was truncated (see :class:`Env`): an agent
    loop that misses the end fails loudly instead of acting in a finished episode."""


def _guard_step(step: Callable[[Any, str], Step]) -> Callable[[Any, str], Step]:
    @functools.wraps(step)
    def guarded(self: Env, action: str) -> Step:
        if self.episode_over:
            raise EpisodeOver(f"the {self.domain or type(self).__name__} episode is over (terminated or truncated): "
                              "call reset() before stepping again")
        res = step(self, action)
        if isinstance(res, tuple) and len(res) == 5:  # a Step (a bare tuple is check_env's to report)
            self._episode_over = bool(res[2] or res[3])
        return res

    return guarded


def _guard_reset(reset: Callable[..., Reset]) -> Callable[..., Reset]:
    @functools.wraps(reset)
    def guarded(self: Env, *args: Any, **kwargs: Any) -> Reset:
        res = reset(self, *args, **kwargs)
        self._episode_over = False
        return res

    return guarded


# Environment ids map to a factory or to a lazy "module:attribute" entry point, so the
# registry knows every built-in environment without importing its (heavy) package.
# tests/test_env_conformance.py runs check_env over every id listed here.
_REGISTRY: dict[str, Callable[..., Env] | str] = {
    "terminal-v1": "agentworld.envs.terminal.env:TerminalEnv",
    "mcp-v1": "agentworld.envs.mcp.env:McpEnv",
    "search-v1": "agentworld.envs.search.env:SearchEnv",
    "swe-v1": "agentworld.envs.swe.env:SweEnv",
    # A device or emulator over adb (kwargs: serial, adb_path...); none runs on our machines.
    "android-v1": "agentworld.envs.android.env:AndroidEnv",
    "os-v1": "agentworld.envs.os.env:DesktopEnv",
    "web-v1": "agentworld.envs.web.env:WebEnv",
    # The simulator (kwargs: world_model, scenario...) and the fictional-world search
    # environment (kwargs: world, question...), made like any real environment.
    "sim-v1": "agentworld.sim.env:SimEnv",
    "fictional-search-v1": "agentworld.sim.worlds.env:FictionalSearchEnv",
}


def register(env_id: str, factory: Callable[..., Env] | str) -> None:
    """Register an environment under a versioned id such as ``terminal-v1``; ``factory`` is
    a callable or a ``"package.module:Class"`` entry point imported on first use."""
    _REGISTRY[env_id] = factory


def make(env_id: str, **kwargs: Any) -> Env:
    if env_id not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY)) or "none registered"
        raise KeyError(f"unknown environment {env_id!r} (known: {known})")
    factory = _REGISTRY[env_id]
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(**kwargs)


def registered() -> list[str]:
    return sorted(_REGISTRY)
