"""``agentworld data``: convert, inspect and (later) build training datasets."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agentworld.bench.format import load_bench_dir, write_bench_dir
from agentworld.bench.select import TurnPolicy, trajectories_to_samples
from agentworld.cli._common import fail, out, report_line_errors
from agentworld.jsonl import JsonlError
from agentworld.trajectory import Trajectory, read_trajectories

app = typer.Typer(help="Convert trajectories to benchmark samples, inspect datasets, build training sets.", no_args_is_help=True)


def _load_trajectories(paths: list[Path], strict: bool) -> list[Trajectory]:
    trajs: list[Trajectory] = []
    for p in paths:
        if not p.exists():
            raise fail(f"no such file: {p}")
        try:
            loaded = read_trajectories(p, strict=strict)
        except JsonlError as exc:
            raise fail(str(exc), "fix the lines above or drop --strict to skip them") from None
        report_line_errors(loaded.errors)
        trajs.extend(loaded.items)
    return trajs


@app.command()
def convert(
    inputs: Annotated[list[Path], typer.Argument(help="Trajectory JSONL files.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for <domain>_test.jsonl files.")],
    policy: Annotated[TurnPolicy, typer.Option(help="Which turns to evaluate.")] = TurnPolicy.spread,
    fraction: Annotated[float | None, typer.Option(help="Keep this seeded share of the chosen turns.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for random turn choice and subsampling.")] = 0,
    strict: Annotated[bool, typer.Option(help="Stop at the first bad line instead of skipping it.")] = False,
) -> None:
    """Turn trajectories into AgentWorldBench samples (one file per domain)."""
    trajs = _load_trajectories(inputs, strict)
    if not trajs:
        raise fail("no valid trajectories in the input")
    samples = list(trajectories_to_samples(trajs, policy=policy, fraction=fraction, seed=seed))
    counts = write_bench_dir(out_dir, samples)
    for domain, n in counts.items():
        out.print(f"{out_dir / f'{domain}_test.jsonl'}: {n} samples")


def _tokens(text: str) -> int:
    # About four characters per token for English text and code with BPE tokenizers;
    # an estimate for sizing datasets, not an exact count.
    return (len(text) + 3) // 4


@app.command()
def stats(
    path: Annotated[Path, typer.Argument(help="A trajectory JSONL file or a benchmark directory.")],
) -> None:
    """Per-domain counts, turns and token estimates of trajectories or benchmark samples."""
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    if path.is_dir():
        bench = load_bench_dir(path)
        report_line_errors(bench.errors)
        for s in bench.samples:
            r = rows[s.domain]
            r["items"] += 1
            r["turns"] += s.turn_idx
            r["action_tokens"] += sum(_tokens(a) for a, _ in s.history()) + _tokens(s.action)
            r["obs_tokens"] += sum(_tokens(o) for _, o in s.history()) + _tokens(s.ground_truth)
            r["system_tokens"] += _tokens(s.system_str)
        kind = "samples"
    elif path.exists():
        for t in _load_trajectories([path], strict=False):
            r = rows[t.domain]
            r["items"] += 1
            r["turns"] += len(t.turns)
            r["action_tokens"] += sum(_tokens(x.action) for x in t.turns)
            r["obs_tokens"] += sum(_tokens(x.observation) for x in t.turns)
            r["system_tokens"] += _tokens(
                " ".join(filter(None, [t.task_description, t.initial_state, t.demonstrations]))
            )
        kind = "trajectories"
    else:
        raise fail(f"no such file or directory: {path}")
    table = Table(title=f"{path} ({kind})")
    for col in ("domain", kind, "turns", "turns/item", "action tok", "obs tok", "system tok"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    total: dict[str, int] = defaultdict(int)
    for domain in sorted(rows):
        r = rows[domain]
        for k, v in r.items():
            total[k] += v
        table.add_row(domain, *_fmt(r))
    if len(rows) > 1:
        table.add_row("[bold]all", *_fmt(total))
    out.print(table)


def _fmt(r: dict[str, int]) -> list[str]:
    items = r["items"] or 1
    return [
        str(r["items"]),
        str(r["turns"]),
        f"{r['turns'] / items:.1f}",
        f"{r['action_tokens']:,}",
        f"{r['obs_tokens']:,}",
        f"{r['system_tokens']:,}",
    ]
