"""``agentworld collect mcp|search|swe``."""

from agentworld.cli.collect._app import app  # noqa: F401
