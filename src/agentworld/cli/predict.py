"""``agentworld predict`` and ``agentworld serve``: use a world model directly."""

import typer

app = typer.Typer(help="Predict the next observation for an action, or run an interactive session.", no_args_is_help=True)
