"""``agentworld env``: list the registered environments, serve a real one over OpenEnv's protocol."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from agentworld.cli._backend import server_policy
from agentworld.cli._common import AllowHostOpt, AllowOriginOpt, console, fail, out
from agentworld.cli.sim import MAX_REQUEST_BYTES, TOKEN

app = typer.Typer(help="Real environments: list them, serve one over HTTP/WebSocket (OpenEnv's protocol).",
                  no_args_is_help=True)

SIMULATED = {"sim-v1": "agentworld sim serve"}
"""Ids served by another command (they need a world model, not keyword arguments)."""


def resolve_env_id(name: str) -> str:
    """A registered id, or the one registered id ``name`` is the unversioned name of
    (``terminal`` -> ``terminal-v1``)."""
    from agentworld.envs import registered

    ids = registered()
    if name in ids:
        return name
    versions = [i for i in ids if i.rpartition("-v")[0] == name]
    if len(versions) == 1:
        return versions[0]
    raise fail(f"unknown environment {name!r}", f"pick one of: {', '.join(ids)}")


@app.command("list")
def list_envs() -> None:
    """The registered environments, with their Gymnasium ids."""
    from agentworld.envs import registered

    table = Table("id", "gymnasium id", "served by")
    for env_id in registered():
        gym = _gym_id(env_id)
        table.add_row(env_id, gym, SIMULATED.get(env_id, f"agentworld env serve {env_id}"))
    out.print(table)


def _gym_id(env_id: str) -> str:
    try:
        from agentworld.envs.gym import gym_id
    except ImportError:  # gymnasium is the agents extra's
        return "(pip install 'agentworld[agents]')"
    return gym_id(env_id)


@app.command("sweep")
def sweep(
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be removed; remove nothing."),
    folder: Path = typer.Option(None, "--dir", help="Folder the runs kept their sandboxes in (default: $TMPDIR or /tmp)."),
) -> None:
    """Remove what killed runs left behind: processes, sandboxes, mounts, cgroups, folders.

    Only what belongs to runs that are gone (owner records: pid and start time); a live
    run's is never touched. Commands that start environments do this when they start."""
    from rich.markup import escape

    from agentworld.envs.sweep import sweep_now

    report = sweep_now(folder, dry_run=dry_run)
    if report.items:
        table = Table("what", title="would remove" if dry_run else "removed")
        table.add_column("where", overflow="fold")
        table.add_column("owner (gone)")
        table.add_column("detail", overflow="fold")
        for item in report.items:
            table.add_row(item.kind, escape(item.name), item.owner or "-", escape(item.detail))
        out.print(table)
    out.print(str(report))
    if report.failed:
        for item in report.failed:
            console.print(f"[yellow]not removed[/] {item.kind} {escape(item.name)}")
        raise fail(f"{len(report.failed)} leftover(s) resisted", "see the warnings above; busy mounts go once nothing uses them")


@app.command()
def serve(
    env: str = typer.Argument(..., help="Environment id (terminal-v1, mcp-v1, search-v1, swe-v1, fictional-search-v1; "
                              "the version may be left out)."),
    env_kwargs: str = typer.Option(None, "--env-kwargs", help='JSON keyword arguments of the environment, e.g. \'{"servers": ["git"]}\'.'),
    host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8000, "--port"),
    max_sessions: int = typer.Option(8, "--max-sessions", help="Open sessions (each a real environment) at most; more get 503."),
    max_inflight: int = typer.Option(8, "--max-inflight", help="Steps running at once."),
    max_waiting: int = typer.Option(64, "--max-waiting", help="Steps waiting for a slot before 429."),
    idle_timeout: float = typer.Option(900.0, "--idle-timeout", help="Seconds after which an untouched session is closed."),
    record: Path = typer.Option(None, "--record", help="Append every finished session's trajectory to this JSONL "
                                "(open sessions too, on SIGINT/SIGTERM)."),
    token: str = TOKEN, max_request_bytes: int = MAX_REQUEST_BYTES,
    allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None,
) -> None:
    """Serve a real environment, one instance per session: OpenEnv's WebSocket protocol at /ws
    (openenv-core clients drive it unchanged), HTTP /reset /step /state /close with sessions."""
    env_id = resolve_env_id(env)
    if env_id in SIMULATED:
        raise fail(f"{env_id} is the simulator", f"serve it with `{SIMULATED[env_id]}`")
    # Refused binds (beyond loopback without a token) fail before any environment is made.
    policy = server_policy(token, max_request_bytes, host=host, allow_hosts=allow_host, allow_origins=allow_origin)
    from agentworld import serving
    from agentworld.sim.inputs import SetupError
    from agentworld.sim.run import make_real_env, parse_env_json
    from agentworld.sim.server import create_app
    from agentworld.sim.sessions import EnvSessions, Limits

    try:
        kwargs, _ = parse_env_json(env_kwargs, None)
        make_real_env(env_id, kwargs).close()  # bad arguments fail now, not at the first client
    except SetupError as exc:
        raise fail(str(exc), exc.hint) from None
    if min(max_sessions, max_inflight) < 1 or max_waiting < 0 or idle_timeout <= 0:
        raise fail("--max-sessions and --max-inflight must be >= 1, --max-waiting >= 0, --idle-timeout > 0")
    limits = Limits(max_sessions=max_sessions, max_inflight=max_inflight, max_waiting=max_waiting, idle_timeout_s=idle_timeout)
    sessions = EnvSessions(lambda _sid: make_real_env(env_id, kwargs), env_id=env_id, limits=limits, record=record)
    auth = "bearer token required" if policy.token else "no token"
    console.print(f"serving [bold]{env_id}[/] on http://{host}:{port} (WebSocket /ws, {auth}, up to {max_sessions} sessions)")
    # The app's shutdown closes, and so records, every open session.
    serving.run(create_app(sessions, policy), host=host, port=port, policy=policy)
