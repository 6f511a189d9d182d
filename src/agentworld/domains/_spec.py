"""What every domain module declares: the knowledge that differs by domain.

Prompt wording, action format, observation format and the LLM judge's guidance live
here (one home per domain, with its parsing and its effects extractor); the offline rule
scorer for a domain lives in ``agentworld.judge.rules.<domain>`` and the executable RL
verifiers in ``agentworld.judge.verifiers``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DomainSpec:
    name: str
    title: str
    environment: str
    """One sentence naming the environment the model plays (used in the system prompt)."""
    action_space: str
    """Default action-space text; mcp and swe replace it with the trajectory's tool set."""
    observation_format: str
    """How a faithful observation looks: layout rules the model must follow."""
    tools_define_actions: bool = False
    """True where the action space is the trajectory's own tool schemas (mcp, swe)."""
    gui: bool = False
    """True for GUI domains, whose filters and scorers read structured trees."""
    judge_guidance: str = ""
    """What the LLM judge checks in this domain's observations (one paragraph of its prompt)."""
