"""Training data: filters, train/test split, turn-level loss masking, CPT/SFT/RL builders.

The public surface is re-exported here. Builders load on first use: they pull in the
judge and model packages, which themselves use the filters defined here.
"""

from agentworld.data.config import CPTConfig, RLConfig, SFTConfig, load_config
from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectories
from agentworld.data.masking import KEEP_RATE, Category, categorize, keep_turn, mask_turns, turn_stats
from agentworld.data.split import SplitSelection, check_leakage, select_split, split_trajectories

_BUILDERS = {"build_cpt": "agentworld.data.cpt", "build_sft": "agentworld.data.sft", "build_rl": "agentworld.data.rl"}


def __getattr__(name: str):
    if name in _BUILDERS:
        import importlib

        return getattr(importlib.import_module(_BUILDERS[name]), name)
    raise AttributeError(name)


__all__ = [
    "KEEP_RATE",
    "CPTConfig",
    "Category",
    "FilterConfig",
    "FilterReport",
    "RLConfig",
    "SFTConfig",
    "SplitSelection",
    "build_cpt",
    "build_rl",
    "build_sft",
    "categorize",
    "check_leakage",
    "filter_trajectories",
    "keep_turn",
    "load_config",
    "mask_turns",
    "select_split",
    "split_trajectories",
    "turn_stats",
]
