"""Shared CLI plumbing: one console, clean errors, progress bars with ETA."""

from __future__ import annotations

from collections.abc import Iterable

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from agentworld.jsonl import LineError

# soft_wrap: a message longer than the terminal (or than rich's 80 columns when piped)
# stays one line, so `file:line: ...` survives grep and editors' jump-to-error. No emoji
# codes: names such as `wm:m:` must not turn into symbols.
console = Console(stderr=True, soft_wrap=True, emoji=False)
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


def progress(*extra_columns: object) -> Progress:
    """A progress bar showing done/total, rate via elapsed time, and ETA."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        *extra_columns,
        console=console,
    )
