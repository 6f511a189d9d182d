"""The terminal action format lives with the domain (:mod:`agentworld.domains.terminal.keys`);
re-exported here for the environment's modules."""

from agentworld.domains.terminal.keys import (
    DEFAULT_DURATION,
    MAX_DURATION,
    ActionError,
    Batch,
    action_json,
    parse_action,
)

__all__ = ["DEFAULT_DURATION", "MAX_DURATION", "ActionError", "Batch", "action_json", "parse_action"]
