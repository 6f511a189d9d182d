"""The SWE environment: real repositories from PyPI sdists, injected bugs, coding tools.

``make("swe-v1")`` gives a :class:`SweEnv`; ``scripted_repair`` plays a repair episode
and ``agent.run_agent`` drives one through any OpenAI-compatible endpoint.
"""

from agentworld.envs.swe.env import Bug, NoBugFound, SweConfig, SweEnv
from agentworld.envs.swe.repos import REPOS, MissingSourceError, RepoSpec
from agentworld.envs.swe.tools import TOOLS, tool_call

__all__ = ["REPOS", "TOOLS", "Bug", "MissingSourceError", "NoBugFound", "RepoSpec", "SweConfig", "SweEnv", "tool_call"]
