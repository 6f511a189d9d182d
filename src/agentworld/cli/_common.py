"""Shared CLI plumbing: one console, clean errors, progress bars with ETA."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agentworld.jsonl import LineError
from agentworld.progress import console as console  # the one stderr console, shared with the library
from agentworld.progress import progress as progress

out = Console(soft_wrap=True, emoji=False)


class UserError(Exception):
    """An error the user can fix; printed without a traceback, with what to do next."""


def fail(message: str, hint: str | None = None) -> typer.Exit:
    # Messages quote paths and user input: brackets in them are text, not rich markup.
    console.print(f"[bold red]error:[/] {escape(message)}")
    if hint:
        console.print(f"[yellow]hint:[/] {escape(hint)}")
    return typer.Exit(code=2)


def report_line_errors(errors: Iterable[LineError], limit: int = 10) -> int:
    errors = list(errors)
    for e in errors[:limit]:
        console.print(f"[yellow]skipped[/] {escape(str(e))}")
    if len(errors) > limit:
        console.print(f"[yellow]... and {len(errors) - limit} more bad lines[/]")
    return len(errors)


# Where parallel work runs: shared by collect, bench infer/judge and data build.
ExecutorOpt = Annotated[str, typer.Option("--executor", metavar="local|ray", help=(
    "Where the work runs: `local` (this process: threads, one event loop, worker processes) or `ray` "
    "(a Ray cluster: an episode per task, a model per actor, data chunks in Ray Data; pip install 'agentworld[ray]')."))]
RayAddressOpt = Annotated[str, typer.Option("--ray-address", metavar="auto|ADDRESS", help=(
    "--executor ray: `auto` joins the cluster this machine belongs to (ray start, $RAY_ADDRESS) or starts a "
    "local one on 127.0.0.1; else a cluster address, HOST:PORT or ray://HOST:PORT."))]
RayWorkersOpt = Annotated[int | None, typer.Option("--ray-workers", min=1, help=(
    "--executor ray: model actors / episodes or chunks in flight (default: one per GPU, else per CPU slot)."))]
RayCpusOpt = Annotated[float, typer.Option("--ray-cpus", min=0.01, help="--executor ray: CPUs each episode task or model actor reserves.")]
RayMemoryOpt = Annotated[int | None, typer.Option("--ray-memory-mb", min=1, help="--executor ray: memory (MiB) each episode task or model actor reserves.")]


# Who may reach a server: shared by every serve command (agentworld serve, sim serve, sim mcp, env serve).
AllowHostOpt = Annotated[list[str] | None, typer.Option("--allow-host", metavar="NAME", help=(
    "Another name clients reach the server at (the Host header, e.g. behind a proxy); repeatable. Admitted "
    "already: the bound address, and for a loopback bind localhost, 127.0.0.1 and [::1]; others get 403 "
    "(DNS rebinding). No wildcards."))]
AllowOriginOpt = Annotated[list[str] | None, typer.Option("--allow-origin", metavar="ORIGIN", help=(
    "A web origin (scheme://host[:port], e.g. http://ui.local:8080) whose browser pages may call the server; "
    "repeatable. Requests with any other Origin header get 403; requests without one (curl, Python clients) "
    "are not affected. '*' is not supported."))]


def executor_config(executor: str = "local", ray_address: str = "auto", ray_workers: int | None = None,
                    ray_cpus: float = 1.0, ray_memory_mb: int | None = None) -> Any:
    """The executor options as an :class:`~agentworld.executors.ExecutorConfig`; with
    ``ray``, checks here that Ray is installed, so a missing extra is a clean error."""
    from agentworld.executors import EXECUTORS, ExecutorConfig, ExecutorUnavailable, require_ray

    if executor not in EXECUTORS:
        raise fail(f"unknown --executor {executor!r}", f"choose from: {', '.join(EXECUTORS)}")
    if executor == "local" and (ray_address != "auto" or ray_workers is not None):
        raise fail("--ray-address and --ray-workers are for --executor ray", "add --executor ray")
    if executor == "ray":
        try:
            require_ray()
        except ExecutorUnavailable as exc:
            raise fail(exc.message, exc.fix) from None
    return ExecutorConfig(kind=executor, address=ray_address, workers=ray_workers,  # type: ignore[arg-type]
                          num_cpus=ray_cpus, memory_mb=ray_memory_mb)
