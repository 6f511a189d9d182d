"""``agentworld collect <domain>``: one module per environment family registers its commands."""

from agentworld.cli.collect import android, os, swe, terminal, tools, web  # noqa: F401  (modules register their commands)
from agentworld.cli.collect._app import app

__all__ = ["app"]
