"""The ``collect`` group and what every environment's collect command shares: split seeds,
common options, and running plus reporting a collection."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, out

app = typer.Typer(help="Record ground-truth trajectories in real sandboxed environments.", no_args_is_help=True)

HELD_OUT = 1_000_000
"""Test-split seeds start here, so held-out episodes never share a seed with training ones."""

Out = Annotated[Path | None, typer.Option("--out", "-o", help="Trajectory JSONL (appended to; resumable).")]
Episodes = Annotated[int, typer.Option(help="Training-split episodes.")]
TestEpisodes = Annotated[int, typer.Option(help="Held-out episodes; they become benchmark samples.")]
Seed = Annotated[int, typer.Option(help="First seed of each split.")]
Workers = Annotated[int, typer.Option(help="Episodes recorded in parallel.")]
BenchDir = Annotated[Path | None, typer.Option(help="Write <domain>_test.jsonl here from held-out episodes.")]
Templates = Annotated[list[str] | None, typer.Option("--template", "-t", help="Only these task templates (repeatable).")]
AgentModel = Annotated[str | None, typer.Option(help="Drive episodes with this model instead of the scripted policy.")]
AgentUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible base URL for --agent-model.")]
AgentKey = Annotated[str, typer.Option(envvar="OPENAI_API_KEY", help="API key for --agent-model.")]
AgentNative = Annotated[bool, typer.Option("--agent-native-tools/--agent-text-tools",
                                           help="OpenAI tool calling, or <tool_call> text for servers without it.")]


def split_jobs(domain: str, episodes: int, test_episodes: int, seed: int, templates: list[str] | None) -> list[Any]:
    """Training jobs on seeds ``seed..``, held-out ones on ``HELD_OUT + seed..``; templates cycle."""
    from agentworld.envs.collect import EpisodeJob

    jobs = []
    for split, n, base in (("train", episodes, seed), ("test", test_episodes, HELD_OUT + seed)):
        for i in range(n):
            s = base + i
            template = templates[i % len(templates)] if templates else None
            jobs.append(EpisodeJob(job_id=f"{domain}-{split}-{s}", seed=s, split=split, task=template))
    return jobs


def run_and_report(domain: str, jobs: list[Any], run_one: Callable[[Any], Any], out_path: Path, workers: int,
         bench_dir: Path | None) -> None:
    """Sweep what killed runs left, run the jobs on the shared runner, print what was
    recorded, exit 1 if any failed."""
    from agentworld.envs.collect import failures_path, run_collection
    from agentworld.envs.sweep import sweep_leftovers

    if (swept := sweep_leftovers()).total:
        console.print(str(swept))
    report = run_collection(jobs, run_one, out=out_path, workers=workers, bench_dir=bench_dir, desc=f"{domain} episodes")
    out.print(f"{out_path}: {report.done} recorded, {report.skipped} already there, {report.failed} failed "
              f"({report.episodes_per_minute:.1f} episodes/min)")
    for path, n in report.bench_files.items():
        out.print(f"{path}: {n} samples")
    if report.failed:
        for job_id, msg in report.failures[:5]:
            console.print(f"[yellow]failed[/] {job_id}: {msg}")
        console.print(f"[yellow]hint:[/] details in {failures_path(out_path)}; run the same command again to retry them")
        raise typer.Exit(code=1)
