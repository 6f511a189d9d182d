"""Seeded terminal task templates, one module per family of tasks."""

from agentworld.envs.templates import TemplateRegistry
from agentworld.envs.terminal.task import TerminalTask

TEMPLATES: TemplateRegistry[TerminalTask] = TemplateRegistry("terminal")

# Importing the modules registers their templates.
from agentworld.envs.terminal.tasks import dev, files, interactive, screens, stateful, system  # noqa: E402,F401
