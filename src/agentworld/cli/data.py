"""``agentworld data``: convert, inspect and (later) build training datasets."""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from agentworld.cli._common import console, fail, out, progress, report_line_errors
from agentworld.jsonl import JsonlError
from agentworld.records.bench import load_bench_dir, reencode_bench_dir, write_bench_dir
from agentworld.records.select import TurnPolicy, trajectories_to_samples
from agentworld.records.trajectory import Trajectory, read_trajectories, write_trajectories

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
) -> None:
    """Write one side of a recorded train/test split (skips *.failures.jsonl in directories)."""
    from agentworld.data.split import select_split  # lazy: the data package loads numpy

    try:
        sel = select_split(sources, split=split.value, exclude_bench=exclude_bench)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    report_line_errors(sel.errors)
    write_trajectories(output, sel.trajectories)
    excluded = f", {sel.in_bench} evaluated by {exclude_bench}" if exclude_bench is not None else ""
    out.print(f"{output}: {len(sel.trajectories)} {split.value}-split trajectories of {sel.read} read from "
              f"{len(sel.files)} files ({sel.other_split} on the other side{excluded})")


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


# -- training data ---------------------------------------------------------------
@app.command("mask-stats")
def mask_stats(
    inputs: Annotated[list[Path], typer.Argument(help="Trajectory JSONL files or directories of them.")],
    seed: Annotated[int, typer.Option(help="Seed of the per-turn partial keep.")] = 0,
    workers: Annotated[int, typer.Option(help="Worker processes (0 = all cores).")] = 0,
    filters: Annotated[bool, typer.Option("--filters/--no-filters", help="Apply the trajectory filters first.")] = True,
) -> None:
    """Turn-level loss masking: category distribution per domain and share of loss tokens kept."""
    from agentworld.data.filters import FilterReport, filter_trajectories, loss_skipped
    from agentworld.data.masking import Category, mask_turns, trajectory_turn_keys
    from agentworld.data.source import load_inputs

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
        batch = mask_turns(
            trajectory_turn_keys(trajs), seed=seed, workers=workers, total=n, on_chunk=lambda k: bar.advance(task, k)
        )
    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    pos = 0
    cats, keep, obs = batch.category.tolist(), batch.keep.tolist(), batch.obs_chars.tolist()
    for t in trajs:
        r = rows[t.domain]
        for turn in t.turns:
            tokens = (obs[pos] + 3) // 4
            r["turns"] += 1
            r[Category(cats[pos]).name] += 1
            r["tokens"] += tokens
            if keep[pos] and not loss_skipped(turn):
                r["kept_turns"] += 1
                r["kept_tokens"] += tokens
            pos += 1
    table = Table(
        title=f"turn-level loss masking ({n:,} turns, seed {seed})",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    table.add_column("domain", min_width=8)
    for col in ("turns", *_SHORT.values(), "kept", "loss"):
        table.add_column(col, justify="right", min_width=len(col))
    total: dict[str, float] = defaultdict(float)
    for domain in sorted(rows):
        for k, v in rows[domain].items():
            total[k] += v
        table.add_row(domain, *_mask_cells(rows[domain]))
    if len(rows) > 1:
        table.add_row("[bold]all", *_mask_cells(total))
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


def _mask_cells(r: dict[str, float]) -> list[str]:
    from agentworld.data.masking import Category

    turns = r["turns"] or 1
    cells = [f"{int(r['turns']):,}"]
    cells += [f"{100 * r[c.name] / turns:.1f}" for c in Category]
    cells.append(f"{100 * r['kept_turns'] / turns:.1f}")
    cells.append(f"{100 * r['kept_tokens'] / (r['tokens'] or 1):.1f}")
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
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="KEY=VALUE override of any config key, e.g. k=5 or backend_options.model=M (repeatable).")] = None,
    pairs: Annotated[list[str] | None, typer.Argument(help="More KEY=VALUE overrides.", metavar="KEY=VALUE", show_default=False)] = None,
) -> None:
    """Build a CPT, SFT or RL dataset (Parquet) from trajectories; resumable.

    The resolved config is saved as config.json beside the dataset."""
    from rich.markup import escape

    from agentworld.config import ConfigError, parse_overrides
    from agentworld.data.config import BUILDERS
    from agentworld.data.resume import ConfigChanged
    from agentworld.data.source import LeakageError

    cls = BUILDERS[kind.value]
    flags = {"inputs": inputs or None, "output_dir": output_dir}
    if config_file is not None and not config_file.exists():
        raise fail(f"no such config file: {config_file}", f"start from configs/data/{kind.value}.yaml")
    try:
        overrides = {**parse_overrides([*(set_ or []), *(pairs or [])]), **{k: v for k, v in flags.items() if v is not None}}
        config = cls.from_yaml(config_file, overrides) if config_file is not None else cls.from_overrides(overrides)
    except ConfigError as exc:
        raise fail(escape(str(exc)), f"{kind.value} config keys: {', '.join(cls.field_help())}") from None
    if not config.inputs:
        raise fail("no input trajectories", "set inputs: in the config or pass --input FILE")
    builder = _builder(kind)
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

            report = builder(config, progress=tick, restart=restart)
    except ConfigChanged as exc:
        raise fail(str(exc), "pass --restart to start over, or choose another --out") from None
    except LeakageError as exc:
        raise fail(str(exc), "lower the near-duplicate threshold or deduplicate the inputs") from None
    except FileNotFoundError as exc:
        raise fail(str(exc), "check inputs, knowledge and tokenizer paths in the config") from None
    except ImportError as exc:
        raise fail(f"building datasets needs {exc.name or 'an optional dependency'}", "pip install 'agentworld[train]'") from None
    _print_build_report(kind, report.to_dict())


def _builder(kind: BuildKind):
    if kind is BuildKind.cpt:
        from agentworld.data.cpt import build_cpt

        return build_cpt
    if kind is BuildKind.sft:
        from agentworld.data.sft import build_sft

        return build_sft
    from agentworld.data.rl import build_rl

    return build_rl


_REPORT_ORDER = ("trajectories", "queries", "rollouts", "valid", "passed", "kept", "retention", "samples", "with_verifier")


def _print_build_report(kind: BuildKind, rep: dict) -> None:
    prep = rep["prepared"]
    for line in prep.get("bad_lines", [])[:10]:
        console.print(f"[yellow]skipped[/] {line}")
    out.print(f"trajectories: {prep['train_trajectories']} train, {prep['test_trajectories']} held out")
    dropped = defaultdict(int)
    for counts in prep["filters"].values():
        for k, v in counts.items():
            if k.startswith(("dropped_", "turns_removed_", "turns_loss_skipped")):
                dropped[k] += v
    if dropped:
        out.print("filters: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    if kind is BuildKind.cpt:
        out.print(
            f"samples {rep['samples']} ({rep['knowledge_samples']} knowledge), rows {rep['rows']}, "
            f"tokens {rep['tokens']:,}, loss tokens {rep['loss_tokens']:,}, truncated {rep['truncated']}"
        )
    else:
        # Metrics as rows, domains as columns: seven domains fit a terminal, twelve metrics do not.
        table = Table(title=f"{kind.value} per domain", box=box.SIMPLE_HEAD)
        per = rep["per_domain"]
        present = {k for c in per.values() for k in c}
        metrics = [k for k in _REPORT_ORDER if k in present] + sorted(present - set(_REPORT_ORDER))
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
