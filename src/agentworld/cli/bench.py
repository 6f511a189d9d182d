"""``agentworld bench``: run a world model on AgentWorldBench samples, judge, score, report."""

import typer

app = typer.Typer(help="AgentWorldBench: run a world model on samples, judge, score, report.", no_args_is_help=True)
