"""The output contract, forced on the backends whose prompt we render (``hf``, ``llamacpp``, ``smol``).

A world model answers with a ``<predicted_observation>`` block. Small models often forget
it (they copy the ``**Environment Observation:**`` marker of the replayed history instead),
so for these backends the runner asks for the block itself: the answer opens with the tag
(appended to the prompt after the assistant turn's start, and put back in front of the
returned text) and generation stops at the closing tag, which the returned text keeps, so
the parser sees a ``complete`` block, or a ``truncated``/``unclosed`` one, never a
``missing`` one. Endpoints (``openai``) render their own prompts and are left as they are.

Reasoning: forcing the tag at the start means the model writes no ``<think>`` block before
it. SmolLM2's template (and every template that does not open reasoning itself) leaves the
choice to the model, and the embedded model is trained to answer directly, so the block is
forced there. A template that opens a reasoning block in the generation prompt (it ends
with ``<think>``, as DeepSeek-R1's does) asks the model to reason first: then nothing is
forced at the start, and only the stop at the closing tag applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentworld.prompts import OBS_CLOSE, OBS_OPEN, THINK_OPEN

_OPEN_THINK_AT_END = re.compile(re.escape(THINK_OPEN) + r"\s*\Z", re.IGNORECASE)


@dataclass(frozen=True)
class AnswerBlock:
    """The tags the answer is forced into."""

    open: str
    close: str

    def prefix(self, prompt: str) -> str:
        """What the answer is forced to open with after ``prompt``: the opening tag, or
        nothing when the prompt leaves a reasoning block open (see the module docstring)."""
        return "" if _OPEN_THINK_AT_END.search(prompt) else self.open

    def cut(self, text: str) -> tuple[str, bool]:
        """``text`` up to and including the first closing tag, and whether it has one."""
        at = text.find(self.close)
        return (text, False) if at < 0 else (text[: at + len(self.close)], True)


OBSERVATION_BLOCK = AnswerBlock(OBS_OPEN, OBS_CLOSE)
