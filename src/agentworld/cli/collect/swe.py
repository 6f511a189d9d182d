"""``agentworld collect swe``."""

from agentworld.cli.collect._app import app  # noqa: F401
