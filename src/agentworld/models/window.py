"""Fitting a session into a local model's context: the oldest exchanges go first.

A published benchmark sample sends its whole history, and a web or desktop session can run
to 20k tokens. A model trained on 8k tokens (SmolLM2) reads past that position only as
noise, and a CPU spends minutes on attention over the excess. So local backends cut the
history to the model's trained context: the system prompt (environment, tools, task) and
the action being answered always stay; whole action/observation exchanges are dropped
from the oldest, so the most recent state -- what the next observation depends on most --
is what the model sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from agentworld.models.base import Message

P = TypeVar("P")


def prompt_budget(max_context: int, max_tokens: int | None) -> int:
    """Prompt tokens a model reading ``max_context`` tokens has left after ``max_tokens``
    new ones; 0 (no limit) when ``max_context`` is 0."""
    return max_context - (max_tokens or 0) if max_context else 0


def fit_prompt(messages: list[Message], render: Callable[[list[Message]], P], length: Callable[[P], int],
               budget: int) -> P:
    """The prompt ``render`` makes of ``messages`` (text or token ids), made of
    :func:`fit_history`'s messages when its ``length`` exceeds ``budget``. A prompt that
    fits -- the usual case -- is rendered and measured once."""
    prompt = render(messages)
    if budget <= 0 or length(prompt) <= budget:
        return prompt
    return render(fit_history(messages, lambda m: length(render(m)), budget))


def fit_history(messages: list[Message], count: Callable[[list[Message]], int], budget: int) -> list[Message]:
    """``messages`` with as few of the oldest history messages dropped as make ``count``
    (prompt tokens) at most ``budget``; unchanged when they fit or ``budget`` is 0.
    Exchanges are dropped whole (an action with its observation), so roles still
    alternate; when even the system prompt and the action alone are too long, they are
    returned as they are (the backend reports the overflow)."""
    if budget <= 0 or count(messages) <= budget:
        return messages
    head = messages[:1] if messages and messages[0].get("role") == "system" else []
    body, last = messages[len(head) : -1], messages[-1:]
    pairs = len(body) // 2 + len(body) % 2  # an odd history's first message goes first, alone

    def dropped(k: int) -> list[Message]:
        cut = min(len(body), 2 * k - len(body) % 2) if k else 0
        return [*head, *body[cut:], *last]

    lo, hi = 1, pairs  # find the fewest exchanges to drop; dropping all of them is the floor
    while lo < hi:
        mid = (lo + hi) // 2
        if count(dropped(mid)) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return dropped(lo)
