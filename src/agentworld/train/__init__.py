"""Training world models: continued pre-training, SFT and GSPO (SPEC section 5).

Each trainer takes a dataset written by ``agentworld data build`` and a model folder
(or ``smol``), runs on top of transformers/TRL, resumes from the last checkpoint in its
output folder and saves its config next to every checkpoint.
"""

from agentworld.train.config import (
    TRAINERS,
    CPTTrainConfig,
    GSPOTrainConfig,
    SFTTrainConfig,
)

__all__ = ["TRAINERS", "CPTTrainConfig", "GSPOTrainConfig", "SFTTrainConfig"]
