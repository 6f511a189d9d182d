"""Whole simulated episodes: play a list of actions and record it; play the same actions in a
real environment and the simulator and measure their drift."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentworld.envs.base import Env, Step
from agentworld.sim.drift import DriftReport, measure_drift, scenario_for
from agentworld.sim.env import SimEnv
from agentworld.sim.inputs import SetupError

# A world model for a scenario's domain; built by the caller once the domain is known
# (the retrieval index follows it), so backend setup stays with the caller.
WorldModelFor = Callable[[str], Any]


@dataclass(frozen=True)
class Episode:
    """A played and recorded episode."""

    turns: int
    out_path: Path


def run_episode(
    env: SimEnv, actions: Sequence[str], out_path: Path, *, seed: int = 0,
    on_reset: Callable[[str], None] | None = None, on_step: Callable[[str, Step], None] | None = None,
) -> Episode:
    """Reset ``env``, play ``actions`` until the episode ends, and append its trajectory to
    ``out_path``. ``on_reset`` sees the first observation, ``on_step`` each action and its
    step as it happens. A cache miss (replay mode) propagates and nothing is written."""
    from agentworld.jsonl import JsonlAppender

    res = env.reset(seed=seed)
    if on_reset is not None:
        on_reset(res.observation)
    for action in actions:
        step = env.step(action)
        if on_step is not None:
            on_step(action, step)
        if step.terminated or step.truncated:
            break
    with JsonlAppender(out_path) as fh:
        fh.append(env.record())
    return Episode(turns=env.turn, out_path=out_path)


def parse_env_json(env_kwargs: str | None, reset_options: str | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The real env's keyword arguments and reset options from their JSON texts
    (``reset_options`` may be ``@file.json``)."""
    try:
        kwargs = json.loads(env_kwargs) if env_kwargs else {}
        if reset_options and reset_options.startswith("@"):
            reset_options = Path(reset_options[1:]).read_text(encoding="utf-8")
        options = json.loads(reset_options) if reset_options else None
    except OSError as exc:
        raise SetupError(f"cannot read --reset-options: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SetupError(f"--env-kwargs/--reset-options must be JSON objects ({exc})") from None
    return kwargs, options


def make_real_env(env_id: str, kwargs: dict[str, Any]) -> Env:
    """The registered real environment ``env_id`` built with ``kwargs``."""
    from agentworld.envs import make

    try:
        return make(env_id, **kwargs)
    except KeyError as exc:
        raise SetupError(str(exc.args[0]), "pick an id from the list") from None
    except TypeError as exc:
        raise SetupError(f"bad arguments for {env_id}: {exc}",
                         "check --env-kwargs (--world and --question are for fictional-search-v1)") from None
    except (ValueError, FileNotFoundError) as exc:
        raise SetupError(f"cannot make {env_id}: {exc}", "check --env-kwargs, --world and --question") from None


def run_drift(
    real: Env, actions: Sequence[str], world_model_for: WorldModelFor, *, env_id: str, seed: int = 0,
    mode: Literal["forced", "free"] = "forced", threshold: float = 3.0, min_factuality: int = 3,
    options: dict[str, Any] | None = None,
) -> DriftReport:
    """Play ``actions`` in ``real`` and in a simulator of it, scoring every step
    (:func:`agentworld.sim.drift.measure_drift`); ``real`` is closed afterwards."""
    if mode not in ("forced", "free"):
        real.close()
        raise SetupError(f"unknown mode {mode!r}", "use forced or free")
    try:
        try:
            first = real.reset(seed=seed, options=options).observation
        except Exception as exc:  # the real env's own failure, shown without a traceback
            raise SetupError(f"the real environment {env_id} failed to reset: {exc}",
                             "check --env-kwargs and --reset-options") from None
        # An env that knows more than its context shows (a fictional world's hidden facts and
        # fact checks) gives the simulator its own scenario and checks.
        sc = real.sim_scenario(first) if hasattr(real, "sim_scenario") else scenario_for(real, first)
        checks: list[Any] = real.sim_checks() if hasattr(real, "sim_checks") else []
        sim = SimEnv(world_model_for(sc.domain), sc, checks=checks)
        return measure_drift(real, sim, actions, env_name=env_id, seed=seed, mode=mode,
                             threshold=threshold, min_factuality=min_factuality, options=options)
    finally:
        real.close()
