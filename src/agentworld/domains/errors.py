"""What an error observation looks like, in the domains whose observations are text.

Anchored on wording, not on the domain, because errors and retries read alike in every
text domain (a shell, a tool result, a search page). The training filters
(:mod:`agentworld.data.filters`) and the RL rule verifiers
(:mod:`agentworld.judge.verifiers`) both read these.
"""

from __future__ import annotations

import re

_LINES = re.IGNORECASE | re.MULTILINE


def _compile(flags: int, *patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, flags) for p in patterns)


# Lines environments print when an action failed.
ERROR_PATTERNS = _compile(
    _LINES,
    r"command not found",
    r"no such file or directory",
    r"^traceback \(most recent call last\)",
    r"^\w*(error|exception)\b.*:",
    r"^error\b",
    r"\berrno \d+",
    r"permission denied",
    r"syntax error",
    r"invalid (argument|option|syntax|json|arguments|parameter)",
    r"unknown (tool|command|option)",
    r"\"iserror\":\s*true",
    r"usage: ",
)

# Errors that say the action itself was not understood (as opposed to a well-formed
# action failing on the state, e.g. a missing file, which is worth learning).
REJECTED_PATTERNS = _compile(
    _LINES,
    r"command not found",
    r"syntax error",
    r"invalid (argument|option|syntax|json|arguments|parameter|input|action)",
    r"unknown (tool|command|option|action)",
    r"usage: ",
    r"validation error",
    r"missing (required|\d+ required)",
    r"(parse|parsing|decode) error",
    r"malformed",
    r"unexpected (token|eof|end of)",
    r"unrecognized (arguments|option)",
)

# Environment-side failures of GUI environments (browser, desktop, device), as opposed
# to the agent's mistakes, which are legitimate observations.
ENV_FAILURE_PATTERNS = _compile(
    re.IGNORECASE,
    r"net::err_",
    r"target (page|context|browser).{0,40}(closed|crashed)",
    r"browser has (been )?(closed|disconnected)",
    r"timeout \d+ ?ms exceeded",
    r"device (offline|not found)",
    r"adb: (error|device)",
    r"accessibility tree (unavailable|could not be read)",
    r"x11 connection (broke|refused)",
    r"cannot open display",
)


def is_error(observation: str) -> bool:
    """Whether an observation reports that the action failed."""
    return any(p.search(observation) for p in ERROR_PATTERNS)


REJECTION_MAX_CHARS = 1500
"""A "not understood" answer is a short error; longer observations (pages, manuals that
mention "usage:" or "syntax error") are content, never a rejection."""


def is_rejected(observation: str) -> bool:
    """Whether an observation says the action was malformed (the garbage of a retry cycle)."""
    if len(observation) > REJECTION_MAX_CHARS:
        return False
    return any(p.search(observation) for p in REJECTED_PATTERNS)



# What identifies an error independently of its wording around it, most specific first.
ERROR_SIGNATURES = (
    re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b"),
    re.compile(r"\[?errno \d+\]?", re.IGNORECASE),
    re.compile(
        r"no such file or directory|command not found|permission denied|not a directory|is a directory"
        r"|file exists|syntax error|connection refused|no space left on device|not found",
        re.IGNORECASE,
    ),
)
