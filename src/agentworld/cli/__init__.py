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
ENV_COMMANDS: dict[str, tuple[str, ...] | None] = {
    "collect": None, "env": ("serve",), "sim": ("serve", "mcp", "run", "drift"), "agent": ("rollout", "eval", "train", "bc"),
}
"""Commands that can start environments (None: every command of the group). Each first removes
what killed runs left behind (:mod:`agentworld.envs.sweep`), before anything of its own."""


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
    sweep_at_start(sys.argv[1:])
    build_app(first if first in GROUPS or first in COMMANDS else None)()


def sweep_at_start(args: list[str]) -> None:
    """Sweep the leftovers of killed runs when ``args`` name a command of :data:`ENV_COMMANDS`
    (not for ``--help``) and say what went. A sweep that fails warns; the command runs anyway."""
    words = [a for a in args if not a.startswith("-")][:2]
    if "--help" in args or len(words) < 2 or words[0] not in ENV_COMMANDS:
        return
    if (commands := ENV_COMMANDS[words[0]]) is not None and words[1] not in commands:
        return
    from agentworld.envs.sweep import sweep_now  # a fresh look, not the cached per-process sweep's

    try:
        report = sweep_now()
    except Exception as exc:  # noqa: BLE001 - a sweep must not stop the command
        problems = [f"{type(exc).__name__}: {exc}"]
        report = None
    else:
        problems = [f"{i.kind} {i.name}" for i in report.failed]
    if report is None or report.total or problems:
        from rich.markup import escape

        from agentworld.cli._common import console

        if report is not None and report.total:
            console.print(escape(str(report)))
        if problems:
            console.print(f"[yellow]warning:[/] leftovers of killed runs not removed: {escape(', '.join(problems[:3]))} "
                          "(`agentworld env sweep --dry-run` lists them)")
