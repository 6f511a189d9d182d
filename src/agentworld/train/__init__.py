"""Training world models: continued pre-training, SFT and GSPO (docs/design.md#training-pipeline).

Each trainer takes a dataset written by ``agentworld data build`` and a model folder
(or ``smol``), runs on top of transformers/TRL, resumes from the last checkpoint in its
output folder and saves its config next to every checkpoint.

The config classes are generated from the trainers' argument classes on first use, so
importing this package does not import transformers or TRL.
"""

from typing import Any

from agentworld.train.config import TRAINERS

_LAZY = {"CPTTrainConfig", "GSPOTrainConfig", "SFTTrainConfig"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agentworld.train import config

        return getattr(config, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TRAINERS", "CPTTrainConfig", "GSPOTrainConfig", "SFTTrainConfig"]  # noqa: F822 - lazy
