"""The ``agentworld`` command line.

Start-up is lazy: ``main`` imports only the command group the command line names
(``agentworld bench infer ...`` never imports the collectors, trainers or simulator),
and every command imports its heavy dependencies inside its body. ``app`` (the full
command tree, for tests and ``--help``) is built on first access.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

HELP = "Language world models: record real environments, build data, train, evaluate and serve simulators."
GROUPS = ("data", "collect", "bench", "sim", "env", "train", "predict", "agent")
"""Command groups, each the ``app`` of ``agentworld.cli.<name>``."""
COMMANDS = {"serve": ("predict", "serve")}
"""Top-level commands: name -> (module, function)."""


def _version(value: bool) -> None:
    if value:
        from agentworld import __version__

        typer.echo(f"agentworld {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Language world models: record real environments, build data, train, evaluate and serve simulators."""


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree; with ``only``, just that group or command (and the root options)."""
    app = typer.Typer(name="agentworld", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False)
    for name in GROUPS:
        if only in (None, name):
            app.add_typer(importlib.import_module(f"agentworld.cli.{name}").app, name=name)
    for name, (module, func) in COMMANDS.items():
        if only in (None, name):
            app.command(name)(getattr(importlib.import_module(f"agentworld.cli.{module}"), func))
    app.callback()(_root)
    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return build_app()
    raise AttributeError(f"module 'agentworld.cli' has no attribute {name!r}")


def main() -> None:
    # httpcore (under httpx) imports trio whenever it is installed, ~0.1 s of start-up for
    # a library no agentworld command runs on; in this process it counts as absent.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    # OpenMP threads (torch's and llama.cpp's) spin at every barrier by default, which stalls
    # a token's hundreds of barriers on shared cores (agentworld.openmp has the figures):
    # the policy is set before torch loads.
    from agentworld.openmp import choose_wait_policy

    choose_wait_policy()
    first = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    build_app(first if first in GROUPS or first in COMMANDS else None)()
