"""``agentworld collect terminal``."""

from agentworld.cli.collect._app import app  # noqa: F401
