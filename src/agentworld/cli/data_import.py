"""``agentworld data import <domain>``: public trajectory datasets -> our trajectories."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentworld.cli._common import console, fail, out

app = typer.Typer(help="Import public trajectory datasets as trajectories.", no_args_is_help=True)


class AndroidFormat(StrEnum):
    """The dataset layouts ``data import android`` reads (agentworld.data.importers.android)."""

    androidcontrol = "androidcontrol"
    uiautomator = "uiautomator"
    rico = "rico"


@app.command("android")
def import_android_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Dataset files or folders.")],
    fmt: Annotated[AndroidFormat, typer.Option("--format", help=(
        "androidcontrol: JSON/JSONL episodes with accessibility_trees (proto JSON) and actions; "
        "uiautomator: episode folders of *.xml dumps + episode.json; rico: trace folders "
        "(gestures.json + view_hierarchies/)."))],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Trajectory JSONL to write.")],
    strict: Annotated[bool, typer.Option(help="Stop at the first bad episode instead of skipping it.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Keep hidden views and one-child layout wrappers.")] = False,
) -> None:
    """Read Android episodes (view hierarchies + actions) as android trajectories: screens
    rendered as the domain's HTML-like elements, actions in its JSON format."""
    from agentworld.data.importers.android import AndroidImportError, import_android
    from agentworld.records.trajectory import write_trajectories

    try:
        rep = import_android(paths, fmt.value, strict=strict, compact=not full)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    except AndroidImportError as exc:
        raise fail(str(exc), "fix the episode or drop --strict to skip it") from None
    for err in rep.errors[:10]:
        console.print(f"[yellow]skipped[/] {escape(err)}")
    if len(rep.errors) > 10:
        console.print(f"[yellow]... and {len(rep.errors) - 10} more bad episodes[/]")
    if not rep.trajectories:
        raise fail(f"no episode could be imported from {', '.join(map(str, paths))}")
    write_trajectories(out_path, rep.trajectories)
    turns = sum(t.num_turns for t in rep.trajectories)
    out.print(f"{out_path}: {len(rep.trajectories)} trajectories, {turns} turns ({len(rep.errors)} episodes skipped)")
