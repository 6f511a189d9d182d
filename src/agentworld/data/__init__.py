"""Training data: filters, train/test split, turn-level loss masking, CPT/SFT/RL builders.

The public surface is re-exported here; builders import their heavy dependencies
(``datasets``, ``transformers``) only when they run.
"""

from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectories
from agentworld.data.masking import KEEP_RATE, Category, categorize, keep_turn, mask_turns, turn_stats
from agentworld.data.split import check_leakage, split_trajectories

__all__ = [
    "KEEP_RATE",
    "Category",
    "FilterConfig",
    "FilterReport",
    "categorize",
    "check_leakage",
    "filter_trajectories",
    "keep_turn",
    "mask_turns",
    "split_trajectories",
    "turn_stats",
]
