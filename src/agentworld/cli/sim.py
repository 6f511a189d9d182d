"""``agentworld sim``: serve a world model as an environment."""

import typer

app = typer.Typer(help="Serve a world model as an environment (Gym-style, HTTP/WebSocket, MCP).", no_args_is_help=True)
