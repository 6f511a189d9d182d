"""Training data: filters, train/test split, turn-level loss masking, CPT/SFT/RL builders.

The public surface is re-exported here; builders import their heavy dependencies
(``datasets``, ``transformers``) only when they run.
"""

from agentworld.data.config import CPTConfig, RLConfig, SFTConfig, load_config
from agentworld.data.cpt import build_cpt
from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectories
from agentworld.data.masking import KEEP_RATE, Category, categorize, keep_turn, mask_turns, turn_stats
from agentworld.data.rl import build_rl
from agentworld.data.sft import build_sft
from agentworld.data.split import check_leakage, split_trajectories

__all__ = [
    "KEEP_RATE",
    "CPTConfig",
    "Category",
    "FilterConfig",
    "FilterReport",
    "RLConfig",
    "SFTConfig",
    "build_cpt",
    "build_rl",
    "build_sft",
    "categorize",
    "check_leakage",
    "filter_trajectories",
    "keep_turn",
    "load_config",
    "mask_turns",
    "split_trajectories",
    "turn_stats",
]
