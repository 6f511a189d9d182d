"""Shared CLI plumbing: one console, clean errors, progress bars with ETA."""

from __future__ import annotations

from collections.abc import Iterable

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
