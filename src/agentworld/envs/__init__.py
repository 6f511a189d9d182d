"""Real, sandboxed environments that record ground-truth trajectories, and the contract
(``Env``, the registry, ``check_env``) the simulator follows too."""

from agentworld.envs.base import Env, EpisodeOver, Reset, Step, make, record_episode, register, registered
from agentworld.envs.checker import CheckReport, EnvCheckError, check_env, check_registered

__all__ = [
    "CheckReport",
    "Env",
    "EnvCheckError",
    "EpisodeOver",
    "Reset",
    "Step",
    "check_env",
    "check_registered",
    "make",
    "record_episode",
    "register",
    "registered",
]
