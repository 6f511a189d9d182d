"""Real, sandboxed environments that record ground-truth trajectories, and the contract
(``Env``, the registry, ``check_env``) the simulator follows too."""

from agentworld.envs.base import Env, EpisodeOver, Reset, Step, make, register, registered
from agentworld.envs.checker import CheckReport, EnvCheckError, check_env, check_registered
from agentworld.envs.record import InfoNotJSON, RecordTurns, record_episode, recorded_turn, sanitize_info

__all__ = [
    "CheckReport",
    "Env",
    "EnvCheckError",
    "EpisodeOver",
    "InfoNotJSON",
    "RecordTurns",
    "Reset",
    "Step",
    "check_env",
    "check_registered",
    "make",
    "record_episode",
    "recorded_turn",
    "register",
    "registered",
    "sanitize_info",
]
