"""The ``agentworld`` command line."""

from __future__ import annotations

import typer

from agentworld.cli import data

app = typer.Typer(
    name="agentworld",
    help="Language world models: record real environments, build data, train, evaluate and serve simulators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(data.app, name="data")
app.add_typer(
    typer.Typer(help="Record ground-truth trajectories in real sandboxed environments.", no_args_is_help=True),
    name="collect",
)
app.add_typer(
    typer.Typer(help="AgentWorldBench: run a world model on samples, judge, score, report.", no_args_is_help=True),
    name="bench",
)
app.add_typer(
    typer.Typer(help="Serve a world model as an environment (Gym-style, HTTP/WebSocket, MCP).", no_args_is_help=True),
    name="sim",
)
app.add_typer(
    typer.Typer(help="Train world models: CPT, SFT and GSPO.", no_args_is_help=True),
    name="train",
)
app.add_typer(
    typer.Typer(help="Predict the next observation for an action, or run an interactive session.", no_args_is_help=True),
    name="predict",
)


def _version(value: bool) -> None:
    if value:
        from agentworld import __version__

        typer.echo(f"agentworld {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Language world models: record real environments, build data, train, evaluate and serve simulators."""


def main() -> None:
    app()
