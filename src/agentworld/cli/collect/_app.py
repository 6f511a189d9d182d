import typer

app = typer.Typer(help="Record ground-truth trajectories in real sandboxed environments.", no_args_is_help=True)
