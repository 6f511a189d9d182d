"""``check_env``: does an environment keep the contract of :mod:`agentworld.envs.base`?

In the spirit of Gymnasium's env checker: run one short episode and raise
:class:`EnvCheckError` naming the environment and the first property it breaks. The
properties are the ones every consumer (collection, drift, the simulator's servers)
relies on: typed results, JSON-able ``info`` (it is recorded as is), ``context()`` keys
that are simulation-context fields (``SimContext``), :class:`~agentworld.envs.base.EpisodeOver` after the end,
the same first observation for the same seed where the env promises it, and a ``close``
that is safe to repeat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentworld.envs.base import Env, EpisodeOver, Reset, Step, make
from agentworld.records.trajectory import SimContext, Trajectory

#: an action every environment must answer (with an error observation, if it is not one
#: of its own) rather than raise on
DEFAULT_ACTION = '{"name": "check_env_probe", "arguments": {}}'

#: the fields of an environment's context (the five simulation-context parts)
CONTEXT_FIELDS = frozenset(SimContext.model_fields)


@dataclass(frozen=True)
class CheckReport:
    """What a passing check exercised."""

    steps: int
    ended: bool
    """Whether the episode ended, so the EpisodeOver contract was checked too."""


class EnvCheckError(AssertionError):
    """An environment breaks the contract; the message names the env and the property."""

    def __init__(self, env_id: str, prop: str, detail: str):
        super().__init__(f"{env_id}: {prop}: {detail}")
        self.env_id, self.prop, self.detail = env_id, prop, detail


def check_env(
    env: Env,
    *,
    actions: Sequence[str] = (DEFAULT_ACTION,),
    seed: int = 0,
    options: dict[str, Any] | None = None,
    env_id: str | None = None,
) -> CheckReport:
    """Run one episode of ``actions`` (stopping at its end) in ``env`` and check the
    contract; raise :class:`EnvCheckError` on the first broken property. ``env`` is closed
    (twice) at the end. To check that ``close`` works without a reset too, use
    :func:`check_registered`, which can make a second instance."""
    name = env_id or type(env).__name__

    def fail(prop: str, detail: str) -> EnvCheckError:
        return EnvCheckError(name, prop, detail)

    first = _call(name, "reset", lambda: env.reset(seed=seed, options=options))
    _check_reset(first, fail)
    ctx = _check_context(env, fail)
    ended, i = False, 0
    for i, action in enumerate(actions, 1):
        res = _call(name, f"step {i}", lambda a=action: env.step(a))
        _check_step(res, i, fail)
        if res.terminated or res.truncated:
            ended = True
            break
    if ended:
        # The project's contract: no auto-reset, a clear error instead. Env subclasses get
        # it from the base class; this catches envs that bypass it (duck-typed ones, a
        # step defined outside the class).
        try:
            env.step(actions[-1])
        except EpisodeOver:
            pass
        except Exception as exc:
            raise fail("step after the end", f"raised {type(exc).__name__} ({exc}), not EpisodeOver") from None
        else:
            raise fail("step after the end", "stepping after terminated/truncated did not raise EpisodeOver")
    if getattr(env, "deterministic_reset", False):
        again = _call(name, "second reset", lambda: env.reset(seed=seed, options=options))
        if again.observation != first.observation:
            raise fail("deterministic reset", f"seed {seed} gave another first observation:\n"
                       f"{first.observation[:300]!r}\nthen\n{again.observation[:300]!r}")
        if (ctx2 := _as_dict(env.context())) != ctx:
            diff = sorted(k for k in set(ctx) | set(ctx2) if ctx.get(k) != ctx2.get(k))
            raise fail("deterministic reset", f"seed {seed} gave another context (differs in {', '.join(diff)})")
    for n in (1, 2):
        _call(name, f"close #{n}", env.close)
    return CheckReport(steps=i, ended=ended)


def check_registered(env_id: str, *, kwargs: dict[str, Any] | None = None, **check: Any) -> CheckReport:
    """``check_env`` on ``make(env_id, **kwargs)``, after checking that an instance that
    was never reset closes cleanly (twice)."""
    kwargs = kwargs or {}
    idle = _call(env_id, "make", lambda: make(env_id, **kwargs))
    for n in (1, 2):
        _call(env_id, f"close without reset #{n}", idle.close)
    env = _call(env_id, "make", lambda: make(env_id, **kwargs))
    try:
        return check_env(env, env_id=env_id, **check)
    finally:
        env.close()


def _call(name: str, what: str, fn: Any) -> Any:
    try:
        return fn()
    except EnvCheckError:
        raise
    except Exception as exc:
        raise EnvCheckError(name, what, f"raised {type(exc).__name__}: {exc}") from exc


def _check_reset(res: Any, fail: Any) -> None:
    if not isinstance(res, Reset):
        raise fail("reset result", f"reset returned {type(res).__name__}, not Reset")
    if not isinstance(res.observation, str):
        raise fail("reset result", f"observation is {type(res.observation).__name__}, not str")
    _check_info(res.info, "reset info", fail)


def _check_step(res: Any, i: int, fail: Any) -> None:
    prop = f"step {i} result"
    if not isinstance(res, Step):
        raise fail(prop, f"step returned {type(res).__name__}, not Step")
    if not isinstance(res.observation, str):
        raise fail(prop, f"observation is {type(res.observation).__name__}, not str")
    if isinstance(res.reward, bool) or not isinstance(res.reward, int | float) or not math.isfinite(res.reward):
        raise fail(prop, f"reward {res.reward!r} is not a finite number")
    for field in ("terminated", "truncated"):
        if not isinstance(getattr(res, field), bool):
            raise fail(prop, f"{field} is {type(getattr(res, field)).__name__}, not bool")
    _check_info(res.info, f"step {i} info", fail)


def _check_info(info: Any, prop: str, fail: Any) -> None:
    if not isinstance(info, dict):
        raise fail(prop, f"info is {type(info).__name__}, not dict")
    problem = _json_problem(info)
    if problem:
        raise fail(prop, f"not JSON as is: {problem}")


def _as_dict(ctx: Any) -> Any:
    return ctx.model_dump() if isinstance(ctx, SimContext) else ctx


def _check_context(env: Env, fail: Any) -> dict[str, Any]:
    raw = _as_dict(env.context())
    if not isinstance(raw, dict):
        raise fail("context", f"context() returned {type(raw).__name__}, not a SimContext")
    ctx: dict[str, Any] = raw
    unknown = sorted(set(ctx) - CONTEXT_FIELDS)
    if unknown:
        raise fail("context keys", f"{', '.join(map(repr, unknown))} are not simulation-context fields "
                   f"(known: {', '.join(sorted(CONTEXT_FIELDS))})")
    problem = _json_problem(ctx)
    if problem:
        raise fail("context", f"not JSON as is: {problem}")
    try:
        Trajectory(id="check", domain=env.domain, **ctx)
    except ValueError as exc:
        raise fail("context", f"does not make a Trajectory (domain {env.domain!r}): {exc}") from None
    return ctx


def _json_problem(value: Any, path: str = "") -> str | None:
    """Where ``value`` would not survive a JSON round trip unchanged (None when it would):
    no ``default=`` conversions, no NaN, no tuples or non-string keys silently changed."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path or 'value'} is {value}"
    if isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := _json_problem(v, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path or 'the dict'} has the non-string key {k!r}"
            if p := _json_problem(v, f"{path}.{k}" if path else k):
                return p
        return None
    return f"{path or 'value'} is a {type(value).__name__}"
