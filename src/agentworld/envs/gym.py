"""AgentWorld's environments registered with Gymnasium under the ``agentworld/`` namespace.

Importing this module, or ``agentworld`` itself (which imports it once Gymnasium is
imported, see :mod:`agentworld._gymnasium`), registers one Gymnasium id per environment of
:mod:`agentworld.envs.base`'s registry, named after it with the same version
(``terminal-v1`` -> ``agentworld/Terminal-v1``, ``sim-v1`` -> ``agentworld/Sim-v1``,
``fictional-search-v1`` -> ``agentworld/FictionalSearch-v1``); ``register_envs()`` adds
those registered since. ``gymnasium.make`` passes its keyword arguments to the environment::

    import gymnasium, agentworld
    env = gymnasium.make("agentworld/Sim-v1", world_model=wm, scenario=scenario)
    obs, info = env.reset(seed=0)

Observations and actions are text (:class:`AnyText`, up to :data:`MAX_TEXT` characters):
the same strings as the AgentWorld env's, so nothing is re-encoded. Needs
``pip install 'agentworld[agents]'`` (gymnasium).
"""

from __future__ import annotations

import copy
import re
from typing import Any, SupportsFloat

import gymnasium
from gymnasium import spaces

from agentworld.envs.base import Env, make, registered

NAMESPACE = "agentworld"
MAX_TEXT = 1 << 20
"""Longest observation or action (characters): generous, a terminal screen is a few KB."""
SAMPLE_LENGTH = 64
"""Longest text :meth:`AnyText.sample` draws (an env checker's random action stays cheap)."""


class AnyText(spaces.Text):
    """Any string up to ``max_length`` characters, whatever its characters.

    ``gymnasium.spaces.Text`` admits only its charset (alphanumerics by default), and no
    charset lists every character a terminal or a tool may print; membership here checks
    the type and length. Samples are drawn from printable ASCII, at most
    :data:`SAMPLE_LENGTH` characters long."""

    def __init__(self, max_length: int = MAX_TEXT, *, seed: int | None = None):
        printable = "".join(chr(c) for c in range(32, 127)) + "\n\t"
        super().__init__(max_length=max_length, min_length=0, charset=printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:
            mask = (int(self.np_random.integers(0, SAMPLE_LENGTH + 1)), None)
        return super().sample(mask=mask, probability=probability)


MEASUREMENTS = ("latency_s", "duration_s", "run_s", "cached")
"""Step ``info`` keys that measure a run (wall time, a cache hit) rather than say what the
environment did: kept out of the Gymnasium ``info``, which Gymnasium expects the same for
the same seed and actions, and found in :attr:`GymEnv.measurements` instead."""


class GymEnv(gymnasium.Env[str, str]):
    """A Gymnasium ``Env`` over an AgentWorld environment (``env``, reachable as ``.env``).

    ``info`` is the environment's, less the :data:`MEASUREMENTS` of the step, which go to
    ``measurements`` (``keep_measurements=True`` leaves them in ``info``)."""

    metadata = {"render_modes": []}

    def __init__(self, env: Env, *, keep_measurements: bool = False):
        self.env = env
        self.keep_measurements = keep_measurements
        self.measurements: dict[str, Any] = {}
        self.observation_space = AnyText()
        self.action_space = AnyText()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)  # seeds self.np_random, as Gymnasium expects
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, copy.deepcopy(info)  # the caller's to keep: an env may reuse what it returned

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if not self.keep_measurements:
            self.measurements = {k: info[k] for k in MEASUREMENTS if k in info}
            info = {k: v for k, v in info.items() if k not in MEASUREMENTS}
        return obs, float(reward), bool(terminated), bool(truncated), copy.deepcopy(info)

    def close(self) -> None:
        self.env.close()


def gym_id(env_id: str) -> str:
    """``terminal-v1`` -> ``agentworld/Terminal-v1``."""
    match = re.fullmatch(r"(.+)-v(\d+)", env_id)
    if match is None:
        raise ValueError(f"environment id {env_id!r} has no version (NAME-vN)")
    name = "".join(part.capitalize() for part in re.split(r"[-_]", match.group(1)))
    return f"{NAMESPACE}/{name}-v{match.group(2)}"


def make_gym(env_id: str, *, keep_measurements: bool = False, **kwargs: Any) -> GymEnv:
    """The registered AgentWorld environment ``env_id`` as a Gymnasium env (what
    ``gymnasium.make`` calls; ``kwargs`` go to the environment)."""
    return GymEnv(make(env_id, **kwargs), keep_measurements=keep_measurements)


def register_envs() -> list[str]:
    """Register every AgentWorld environment with Gymnasium (again: a no-op); returns the
    Gymnasium ids."""
    ids = []
    for env_id in registered():
        gid = gym_id(env_id)
        if gid not in gymnasium.registry:
            gymnasium.register(gid, entry_point=make_gym, kwargs={"env_id": env_id})
        ids.append(gid)
    return ids


register_envs()  # at import, as Gymnasium packages register theirs

__all__ = ["MAX_TEXT", "MEASUREMENTS", "NAMESPACE", "AnyText", "GymEnv", "gym_id", "make_gym", "register_envs"]
