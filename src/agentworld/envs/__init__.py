"""Real, sandboxed environments that record ground-truth trajectories."""

from agentworld.envs.base import Env, Reset, Step, make, record_episode, register, registered

__all__ = ["Env", "Reset", "Step", "make", "record_episode", "register", "registered"]
