"""``agentworld train``: CPT, SFT and GSPO."""

import typer

app = typer.Typer(help="Train world models: CPT, SFT and GSPO.", no_args_is_help=True)
