"""Seeded terminal task templates, one module per family of tasks."""

from agentworld.envs.terminal.task import TemplateRegistry

TEMPLATES = TemplateRegistry()
