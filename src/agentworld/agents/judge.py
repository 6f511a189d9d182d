"""An LLM judge for end-state checks the simulator's ledger cannot decide.

Given what must hold and the simulated episode's last turns, a model answers YES or NO;
anything else is no verdict (the rule judge decides instead). Any backend the shared
spec names can judge.
"""

from __future__ import annotations

import asyncio
import re

from agentworld.agents.tasks import JudgeFn
from agentworld.models.base import Backend, GenerationConfig
from agentworld.records.trajectory import Trajectory

_VERDICT = re.compile(r"\b(YES|NO)\b")
PROMPT = ("You check whether an agent's episode in a computer environment reached a required end state. "
          "Read the actions and what the environment showed, then answer with one word: YES if the "
          "end state certainly holds, NO otherwise.")


def episode_text(traj: Trajectory, *, last: int = 8, max_chars: int = 1500) -> str:
    parts = [f"Task: {traj.task_description}"]
    for i, t in enumerate(traj.turns[-last:], start=max(1, len(traj.turns) - last + 1)):
        parts.append(f"[{i}] action: {t.action[:max_chars]}\n[{i}] screen/result: {t.observation[-max_chars:]}")
    return "\n\n".join(parts)


def model_judge(backend: Backend, *, config: GenerationConfig | None = None) -> JudgeFn:
    """A judge over ``backend``. It is called from worker threads (grading runs off the event
    loop), so each call runs its own short event loop."""
    cfg = GenerationConfig(temperature=0.0, max_tokens=8, n=1).merged(config)

    def judge(requirement: str, traj: Trajectory) -> bool | None:
        messages = [{"role": "system", "content": PROMPT},
                    {"role": "user", "content": f"{episode_text(traj)}\n\nRequired end state: {requirement}\nAnswer:"}]
        try:
            [out, *_] = asyncio.run(backend.complete(messages, cfg))
        except Exception:  # noqa: BLE001 - a failed judge call is no verdict, not a failed check
            return None
        m = _VERDICT.search(out.text.upper())
        return None if m is None else m.group(1) == "YES"

    return judge
