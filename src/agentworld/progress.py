"""The console and progress bars every long run shows (CLI and library alike)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

# soft_wrap: a message longer than the terminal (or than rich's 80 columns when piped)
# stays one line, so `file:line: ...` survives grep and editors' jump-to-error. No emoji
# codes: names such as `wm:m:` must not turn into symbols.
console = Console(stderr=True, soft_wrap=True, emoji=False)


def progress(*extra_columns: object) -> Progress:
    """A progress bar showing done/total, elapsed time and ETA."""
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
