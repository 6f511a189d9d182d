"""The ``agentworld`` command line."""

from __future__ import annotations

import typer

from agentworld.cli import bench, collect, data, predict, sim, train

app = typer.Typer(
    name="agentworld",
    help="Language world models: record real environments, build data, train, evaluate and serve simulators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(data.app, name="data")
app.add_typer(collect.app, name="collect")
app.add_typer(bench.app, name="bench")
app.add_typer(sim.app, name="sim")
app.add_typer(train.app, name="train")
app.add_typer(predict.app, name="predict")
app.command("serve")(predict.serve)


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
