"""``agentworld collect mcp|search``."""

from agentworld.cli.collect._app import app  # noqa: F401
