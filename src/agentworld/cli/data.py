"""``agentworld data``: convert, inspect and (later) build training datasets."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from agentworld.cli._common import (
    ExecutorOpt,
    RayAddressOpt,
    RayCpusOpt,
    RayWorkersOpt,
    console,
    executor_config,
    fail,
    out,
    progress,
    report_line_errors,
)
from agentworld.cli.data_import import app as import_app
from agentworld.jsonl import JsonlError
from agentworld.records.bench import reencode_bench_dir
from agentworld.records.select import TurnPolicy
from agentworld.records.trajectory import write_trajectories

if TYPE_CHECKING:  # the data package loads numpy: imported in the commands that need it
    from agentworld.data.stats import DomainSize, MaskRow

class DataFormat(StrEnum):
    """How a dataset is written (agentworld.data.parquet)."""

    jsonl = "jsonl"
    parquet = "parquet"
    both = "both"


app = typer.Typer(help="Convert trajectories to benchmark samples, inspect datasets, build training sets.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@app.command()
def convert(
    inputs: Annotated[list[Path], typer.Argument(help="Trajectory JSONL files.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for <domain>_test.jsonl files.")],
    policy: Annotated[TurnPolicy, typer.Option(help="Which turns to evaluate.")] = TurnPolicy.spread,
    fraction: Annotated[float | None, typer.Option(help="Keep this seeded share of the chosen turns.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for random turn choice and subsampling.")] = 0,
    strict: Annotated[bool, typer.Option(help="Stop at the first bad line instead of skipping it.")] = False,
    fmt: Annotated[DataFormat, typer.Option("--format", help="jsonl (what `bench` reads), parquet (<domain>_test.parquet, Hugging Face datasets) or both.")] = DataFormat.jsonl,
) -> None:
    """Turn trajectories into AgentWorldBench samples (one file per domain)."""
    from agentworld.bench.convert import convert_trajectories

    try:
        res = convert_trajectories(
            inputs, out_dir, policy=policy, fraction=fraction, seed=seed, strict=strict, fmt=fmt.value
        )
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    except JsonlError as exc:
        raise fail(str(exc), "fix the lines above or drop --strict to skip them") from None
    report_line_errors(res.errors)
    if not res.trajectories:
        raise fail("no valid trajectories in the input")
    for domain, n in res.samples.items():
        out.print(f"{', '.join(map(str, res.files(domain)))}: {n} samples")


@app.command()
def reencode(
    bench_dir: Annotated[Path, typer.Argument(help="Directory of <domain>_test.jsonl files.")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of in place.")] = None,
) -> None:
    """Store responses as the published set does (an **Environment Observation:** line first).

    Ids, order, key order and extra keys are kept; running it again changes nothing.
    """
    try:
        done = reencode_bench_dir(bench_dir, out_dir)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    except JsonlError as exc:
        raise fail(str(exc), "fix the lines above and run it again (files already done are left as they are)") from None
    if not done:
        raise fail(f"no *_test.jsonl files in {bench_dir}")
    for r in done:
        out.print(f"{r.path}: {r.records} records, {r.changed} re-encoded")


class SplitSide(StrEnum):
    train = "train"
    test = "test"


@app.command("split")
def split_cmd(
    sources: Annotated[list[Path], typer.Argument(help="Trajectory JSONL files or directories of them.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="Trajectory JSONL file to write.")],
    split: Annotated[SplitSide, typer.Option(help="Side of the recorded split to keep (train: everything not test).")]
    = SplitSide.train,
    exclude_bench: Annotated[Path | None, typer.Option(
        help="Benchmark directory: leave out the trajectories its samples evaluate.")] = None,
    drop_leaks: Annotated[bool, typer.Option(
        "--drop-leaks/--keep-leaks",
        help="Train side: leave out trajectories that near-duplicate, or copy turns of, a held-out one.")] = True,
) -> None:
    """Write one side of a recorded train/test split (skips *.failures.jsonl in directories)."""
    from rich.markup import escape

    from agentworld.data.split import select_split  # lazy: the data package loads numpy

    try:
        sel = select_split(sources, split=split.value, exclude_bench=exclude_bench, drop_leaks=drop_leaks)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    report_line_errors(sel.errors)
    write_trajectories(output, sel.trajectories)
    excluded = f", {sel.in_bench} evaluated by {exclude_bench}" if exclude_bench is not None else ""
    n_leaked = len({train_id for train_id, _, _ in sel.leaked})
    leaked = f", {n_leaked} left out for leaking held-out ones" if n_leaked else ""
    out.print(f"{output}: {len(sel.trajectories)} {split.value}-split trajectories of {sel.read} read from "
              f"{len(sel.files)} files ({sel.other_split} on the other side{excluded}{leaked})")
    for train_id, test_id, score in sel.leaked[:5]:
        console.print(f"[yellow]left out[/] {escape(train_id)}: leaks held-out {escape(test_id)} ({score:.2f})")


@app.command()
def stats(
    path: Annotated[Path, typer.Argument(help="A trajectory JSONL file or a benchmark directory.")],
) -> None:
    """Per-domain counts, turns and token estimates of trajectories or benchmark samples."""
    from agentworld.data.stats import dataset_stats

    try:
        st = dataset_stats(path)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    report_line_errors(st.errors)
    table = Table(title=f"{path} ({st.kind})")
    for col in ("domain", st.kind, "turns", "turns/item", "action tok", "obs tok", "system tok"):
        table.add_column(col, justify="left" if col == "domain" else "right")
    for domain, r in st.per_domain.items():
        table.add_row(domain, *_fmt(r))
    if len(st.per_domain) > 1:
        table.add_row("[bold]all", *_fmt(st.total))
    out.print(table)


def _fmt(r: DomainSize) -> list[str]:
    return [str(r.items), str(r.turns), f"{r.turns_per_item:.1f}", f"{r.action_tokens:,}", f"{r.obs_tokens:,}",
            f"{r.system_tokens:,}"]


# -- training data ---------------------------------------------------------------
@app.command("mask-stats")
def mask_stats(
    inputs: Annotated[list[Path], typer.Argument(help="Trajectory JSONL files or directories of them.")],
    seed: Annotated[int, typer.Option(help="Seed of the per-turn partial keep.")] = 0,
    workers: Annotated[int, typer.Option(help="Worker processes (0 = all cores).")] = 0,
    filters: Annotated[bool, typer.Option("--filters/--no-filters", help="Apply the trajectory filters first.")] = True,
) -> None:
    """Turn-level loss masking: category distribution per domain and share of loss tokens kept."""
    from agentworld.data.filters import FilterReport, filter_trajectories
    from agentworld.data.source import load_inputs
    from agentworld.data.stats import mask_stats

    try:
        trajs, errors = load_inputs([str(p) for p in inputs])
    except FileNotFoundError as exc:
        raise fail(str(exc), "pass trajectory .jsonl files or folders that hold them") from None
    report_line_errors(errors)
    if filters:
        trajs = list(filter_trajectories(trajs, report=FilterReport()))
    if not trajs:
        raise fail("no trajectories left to measure", "check the inputs or run with --no-filters")
    n = sum(len(t.turns) for t in trajs)
    with progress() as bar:
        task = bar.add_task("masking turns", total=n)
        st = mask_stats(trajs, seed=seed, workers=workers, on_chunk=lambda k: bar.advance(task, k))
    table = Table(
        title=f"turn-level loss masking ({n:,} turns, seed {seed})",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    table.add_column("domain", min_width=8)
    for col in ("turns", *_SHORT.values(), "kept", "loss"):
        table.add_column(col, justify="right", min_width=len(col))
    for domain, r in st.per_domain.items():
        table.add_row(domain, *_mask_cells(r))
    if len(st.per_domain) > 1:
        table.add_row("[bold]all", *_mask_cells(st.total))
    out.print(table)
    out.print(
        "% of turns per category (echo, boilerplate, expansion, retrieval, action, transform, other) "
        "and kept in the loss; loss: % of loss tokens kept (observation chars / 4)"
    )


_SHORT = {
    "echo": "echo",
    "boilerplate": "boil",
    "expansion": "expa",
    "retrieval": "retr",
    "action": "act",
    "transform": "trans",
    "other": "other",
}


def _mask_cells(r: MaskRow) -> list[str]:
    from agentworld.data.masking import Category

    turns = r.turns or 1
    cells = [f"{r.turns:,}"]
    cells += [f"{100 * r.categories.get(c.name, 0) / turns:.1f}" for c in Category]
    cells.append(f"{100 * r.kept_turns / turns:.1f}")
    cells.append(f"{100 * r.kept_tokens / (r.tokens or 1):.1f}")
    return cells


class BuildKind(StrEnum):
    cpt = "cpt"
    sft = "sft"
    rl = "rl"


@app.command()
def build(
    kind: Annotated[BuildKind, typer.Argument(help="Which dataset: cpt, sft or rl.")],
    config_file: Annotated[Path | None, typer.Option("--config", "-c", help="YAML config (see configs/data/).")] = None,
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i", help="Trajectory file or folder (repeatable); replaces the config's inputs.")] = None,
    output_dir: Annotated[str | None, typer.Option("--out", "-o", help="Output directory; replaces the config's output_dir.")] = None,
    restart: Annotated[bool, typer.Option(help="Discard the resume log in the output directory and start over.")] = False,
    exclude_bench: Annotated[list[str] | None, typer.Option("--exclude-bench", help="Benchmark directory (repeatable): never train on the trajectories it evaluates or near-duplicates of them; adds to the config's exclude_bench.")] = None,
    allow_leakage: Annotated[bool, typer.Option("--allow-leakage", help="Build even when held-out trajectories leak into training (reported, not fatal).")] = False,
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE override of any config key, e.g. k=5 or backend_options.model=M (repeatable).")] = None,
    fmt: Annotated[DataFormat | None, typer.Option("--format", help="Write Parquet shards, JSONL or both; replaces the config's output_format (default parquet).")] = None,
    pairs: Annotated[list[str] | None, typer.Argument(help="More KEY=VALUE overrides.", metavar="KEY=VALUE", show_default=False)] = None,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = "auto",
    ray_workers: RayWorkersOpt = None,
    ray_cpus: RayCpusOpt = 1.0,
) -> None:
    """Build a CPT, SFT or RL dataset (Parquet and/or JSONL) from trajectories; resumable.

    The resolved config is saved as config.json beside the dataset. With --executor ray the
    CPT builder masks and tokenizes in Ray Data; the dataset is the same byte for byte."""
    from rich.markup import escape

    from agentworld.config import ConfigError, parse_overrides
    from agentworld.data.builds import build_dataset, load_build_config
    from agentworld.data.config import BUILDERS
    from agentworld.data.resume import ConfigChanged
    from agentworld.data.source import LeakageError
    from agentworld.executors import ExecutorUnavailable

    exec_config = executor_config(executor, ray_address, ray_workers, ray_cpus)
    if exec_config.is_ray and kind is not BuildKind.cpt:
        raise fail(f"--executor ray builds cpt datasets; {kind.value} runs in this process", "drop --executor ray")
    flags = {"inputs": inputs or None, "output_dir": output_dir, "allow_leakage": allow_leakage or None,
             "output_format": fmt.value if fmt else None}
    try:
        overrides = {**parse_overrides([*(set_ or []), *(pairs or [])]), **{k: v for k, v in flags.items() if v is not None}}
        config = load_build_config(kind.value, config_file, overrides)
        if exclude_bench:
            config = config.model_copy(update={"exclude_bench": [*config.exclude_bench, *exclude_bench]})
    except FileNotFoundError as exc:
        raise fail(str(exc), f"start from configs/data/{kind.value}.yaml") from None
    except ConfigError as exc:
        raise fail(escape(str(exc)), f"{kind.value} config keys: {', '.join(BUILDERS[kind.value].field_help())}") from None
    if not config.inputs:
        raise fail("no input trajectories", "set inputs: in the config or pass --input FILE")
    try:
        with progress() as bar:
            tasks: dict[str, object] = {}

            def tick(stage: str, advance: int, total: int | None) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                elif total is not None:
                    bar.update(tasks[stage], total=total)
                if advance:
                    bar.advance(tasks[stage], advance)

            report = build_dataset(kind.value, config, progress=tick, restart=restart, executor=exec_config)
    except ExecutorUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    except ConfigChanged as exc:
        raise fail(str(exc), "pass --restart to start over, or choose another --out") from None
    except LeakageError as exc:
        raise fail(f"leakage: {exc}", "drop the leaked trajectories from the inputs (agentworld data split "
                   "--exclude-bench DIR), pass --exclude-bench DIR, or --allow-leakage to build anyway") from None
    except FileNotFoundError as exc:
        raise fail(str(exc), "check inputs, knowledge and tokenizer paths in the config") from None
    except ImportError as exc:
        raise fail(f"building datasets needs {exc.name or 'an optional dependency'}", "pip install 'agentworld[train]'") from None
    _print_build_report(kind, report.to_dict())


def _print_leakage(prep: dict) -> None:
    leak = prep["leakage"]
    held = prep["test_trajectories"] + prep["held_out_trajectories"]
    if leak["ok"]:
        out.print(f"leakage: ok ({held} held out, {prep['excluded_trajectories']} excluded from training)")
        return
    examples = ", ".join(f"{a} ~ {b}" for a, b, _ in leak["near_duplicates"][:3])
    console.print(f"[yellow]leakage (allowed):[/] {len(leak['shared_ids'])} held-out id(s) in training, "
                  f"{len(leak['near_duplicates'])} near-duplicate(s) of {held} held out" + (f" (e.g. {examples})" if examples else ""))


def _print_build_report(kind: BuildKind, rep: dict) -> None:
    from agentworld.data.stats import dropped_counts, report_metrics

    prep = rep["prepared"]
    for line in prep.get("bad_lines", [])[:10]:
        console.print(f"[yellow]skipped[/] {line}")
    out.print(f"trajectories: {prep['train_trajectories']} train, {prep['test_trajectories']} test split, "
              f"{prep['excluded_trajectories']} excluded from training")
    _print_leakage(prep)
    dropped = dropped_counts(prep["filters"])
    if dropped:
        out.print("filters: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))
    if kind is BuildKind.cpt:
        out.print(
            f"samples {rep['samples']} ({rep['knowledge_samples']} knowledge), rows {rep['rows']}, "
            f"tokens {rep['tokens']:,}, loss tokens {rep['loss_tokens']:,}, truncated {rep['truncated']}"
        )
    else:
        # Metrics as rows, domains as columns: seven domains fit a terminal, twelve metrics do not.
        table = Table(title=f"{kind.value} per domain", box=box.SIMPLE_HEAD)
        per = rep["per_domain"]
        metrics = report_metrics(per)
        table.add_column("")
        for d in per:
            table.add_column(d, justify="right")
        for m in metrics:
            table.add_row(m, *(str(c.get(m, 0)) for c in per.values()))
        out.print(table)
    out.print(f"wrote {rep['output']}")
    if rep.get("call_errors"):
        console.print(f"[yellow]{len(rep['call_errors'])} queries got no answer:[/] {rep['call_errors'][0]}")
        console.print("[yellow]hint:[/] check the backend (model, base_url); rerun the same command to retry them")
