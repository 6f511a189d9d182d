"""``agentworld bench``: run a world model on AgentWorldBench samples, judge, score, report."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.progress import TextColumn
from rich.table import Table

from agentworld.cli._backend import BackendOpt, OptsOpt, backend_spec, open_backend, open_cache
from agentworld.cli._common import (
    ExecutorOpt,
    RayAddressOpt,
    RayCpusOpt,
    RayMemoryOpt,
    RayWorkersOpt,
    console,
    executor_config,
    fail,
    out,
    progress,
    report_line_errors,
)

app = typer.Typer(help="AgentWorldBench: run a world model on samples, judge, score, report.", no_args_is_help=True)

CacheModeOpt = Annotated[str, typer.Option("--cache-mode", help="off | rw (read hits, store new) | replay (hits only; a miss is an error).")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Empty the output file first (it was written with other settings).")]


def run_guarded(coro_fn):
    """Run a bench coroutine; a busy output file or a settings clash is a clean error."""
    from agentworld.bench.infer import SettingsMismatch
    from agentworld.jsonl import FileBusy
    from agentworld.models import CacheMiss

    try:
        return asyncio.run(coro_fn())
    except FileBusy as exc:
        raise fail(str(exc), "wait for that run to finish, or write to another --out file") from None
    except SettingsMismatch as exc:
        raise fail(str(exc)) from None
    except CacheMiss as exc:
        raise fail(str(exc)) from None


def _load_samples(bench: Path, domains, ids, sample, seed, limit):
    from agentworld.bench.infer import select_samples
    from agentworld.records.bench import load_bench_dir

    try:
        loaded = load_bench_dir(bench, domains=domains)
    except FileNotFoundError as exc:
        raise fail(str(exc), "pass a directory holding <domain>_test.jsonl files") from None
    report_line_errors(loaded.errors)
    chosen = select_samples(loaded.samples, domains=domains, ids=ids, sample=sample, seed=seed, limit=limit)
    if not chosen:
        raise fail(f"no samples selected from {bench}", "check --domain / --id / --limit, or the files in the directory")
    return chosen


@app.command()
def infer(
    bench: Annotated[Path, typer.Argument(help="Benchmark directory with <domain>_test.jsonl files.")],
    out_path: Annotated[Path, typer.Option("--out", "-o", help="Predictions JSONL (appended to; a rerun resumes).")],
    backend: BackendOpt = "smol",
    opt: OptsOpt = None,
    domain: Annotated[list[str] | None, typer.Option("--domain", "-d", help="Only these domains (repeatable).")] = None,
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these sample ids or uids (repeatable).")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many samples per domain.")] = None,
    sample: Annotated[int | None, typer.Option(help="A seeded random subset of this many samples per domain.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for --sample (default 0) and, when given, for generation "
                                                  "(unset: the server's own).")] = None,
    n: Annotated[int, typer.Option(help="Predictions per sample.")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Backend calls in flight.")] = 4,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature (default: 0.6 for openai, as published; 0.0 for the local backends smol, hf, retrieval).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Completion token limit (default: 32768 for openai, as published; 1024 for the local backends).")] = None,
    cache: Annotated[Path | None, typer.Option(help="Response cache (SQLite) to read and fill.")] = None,
    cache_mode: CacheModeOpt = "rw",
    retry_failed: Annotated[bool, typer.Option(help="Ask again where a stored call failed.")] = False,
    overwrite: OverwriteOpt = False,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = "auto",
    ray_workers: RayWorkersOpt = None,
    ray_cpus: RayCpusOpt = 1.0,
    ray_memory_mb: RayMemoryOpt = None,
) -> None:
    """Predict observations for benchmark samples (concurrent, resumable). With --executor ray
    a local model (hf, smol) runs in Ray actors, one per GPU or CPU slot; keep -c at least
    the actors times the batch each should get."""
    from agentworld.bench.infer import PUBLISHED_DEFAULTS, run_infer
    from agentworld.models import GenerationConfig, WorldModel

    spec = backend_spec(backend, opt)
    exec_config = executor_config(executor, ray_address, ray_workers, ray_cpus, ray_memory_mb)
    samples = _load_samples(bench, domain, ids, sample, seed or 0, limit)
    cache_ = open_cache(cache, cache_mode)
    wm = WorldModel(
        open_backend(spec, exec_config),
        cache=cache_,
        concurrency=concurrency,
        # Served models get the published settings; local ones keep the small library defaults.
        defaults=PUBLISHED_DEFAULTS if spec.name == "openai" else None,
    )
    config = GenerationConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)
    with progress(TextColumn("{task.fields[stats]}")) as bar:
        task = bar.add_task(f"infer {wm.backend.name}", total=len(samples), stats="")

        def show(p) -> None:
            stats = f"{p.rate:.2f}/s tok {p.prompt_tokens + p.completion_tokens:,} cached {p.cached} fail {p.failures} bad {p.invalid}"
            bar.update(task, completed=p.done + p.skipped, stats=stats)

        async def go():
            try:
                return await run_infer(
                    wm, samples, out_path, n=n, config=config, retry_failed=retry_failed, overwrite=overwrite, on_progress=show
                )
            finally:
                await wm.aclose()

        result = run_guarded(go)
    cached = f"; {result.cached} predictions from the cache ({result.cached_tokens:,} stored tokens, not spent again)" if result.cached else ""
    out.print(
        f"{out_path}: {result.done} samples predicted, {result.skipped} already there; "
        f"{result.failures} failed calls, {result.invalid} truncated or missing answers, {result.untagged} untagged (scored); "
        f"{result.prompt_tokens:,} prompt + {result.completion_tokens:,} completion tokens spent{cached}"
    )


@app.command()
def judge(
    bench: Annotated[Path, typer.Argument(help="Benchmark directory the predictions were made on.")],
    predictions: Annotated[Path, typer.Option("--predictions", "-p", help="Predictions JSONL from `bench infer`.")],
    out_path: Annotated[Path | None, typer.Option("--out", "-o", help="Verdicts JSONL (default: <predictions>.judged.jsonl).")] = None,
    judges: Annotated[list[str] | None, typer.Option("--judge", "-j", help="rules, or a backend spec with an optional NAME= label, e.g. judge=openai:MODEL@URL,max_retries=2 (repeatable).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Verdicts in flight.")] = 4,
    retries: Annotated[int, typer.Option(help="Extra attempts when a judge's output does not parse.")] = 2,
    cache: Annotated[Path | None, typer.Option(help="Response cache for LLM judges.")] = None,
    cache_mode: CacheModeOpt = "rw",
    rejudge: Annotated[bool, typer.Option(help="Judge again where a verdict exists.")] = False,
    retry_failed: Annotated[bool, typer.Option(help="Judge again where a verdict failed.")] = False,
    judge_prompts: Annotated[Path | None, typer.Option("--judge-prompts", help=(
        "Your copy of the published judge prompts: a folder of DOMAIN/judge_system_prompt.txt files (the release's "
        "prompts/ folder) plus the user template, judge_user_prompt.txt there or JUDGE_USER_PROMPT in the release's "
        "eval/lwm_eval_utils.py beside it. With it the judge request is the published one by default."))] = None,
    judge_style: Annotated[str | None, typer.Option("--judge-style", metavar="published|agentworld", help=(
        "published: the published evaluation's judge request exactly (needs --judge-prompts; temperature 0.6, "
        "32768 max tokens); agentworld: ours (context, last 8 turns, clipped fields; temperature 0, 1024 max tokens), "
        "with the published system prompts when --judge-prompts is given. Default: published with --judge-prompts, "
        "else agentworld."))] = None,
    judge_temperature: Annotated[float | None, typer.Option(help="LLM judges' sampling temperature (default: the style's, 0.6 published, 0.0 agentworld).")] = None,
    judge_max_tokens: Annotated[int | None, typer.Option(help="LLM judges' completion token limit (default: the style's, 32768 published, 1024 agentworld).")] = None,
    overwrite: OverwriteOpt = False,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = "auto",
    ray_workers: RayWorkersOpt = None,
    ray_cpus: RayCpusOpt = 1.0,
    ray_memory_mb: RayMemoryOpt = None,
) -> None:
    """Judge stored predictions with the rule scorer and/or LLM judges (resumable). With
    --executor ray a local-model judge (hf, smol) runs in Ray actors."""
    from agentworld.bench.infer import load_predictions
    from agentworld.bench.judges import JudgeNameClash, distinct_judge_names
    from agentworld.bench.judging import run_judging
    from agentworld.judge import RuleScorer
    from agentworld.judge.llm import LLMJudge
    from agentworld.models import GenerationConfig, WorldModel
    from agentworld.records.bench import load_bench_dir

    exec_config = executor_config(executor, ray_address, ray_workers, ray_cpus, ray_memory_mb)
    if not predictions.exists():
        raise fail(f"no such file: {predictions}", "run `agentworld bench infer` first")
    loaded = load_predictions(predictions)
    report_line_errors(loaded.errors)
    try:
        bench_set = load_bench_dir(bench)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    report_line_errors(bench_set.errors)
    samples = bench_set.samples
    out_path = out_path or predictions.with_suffix(".judged.jsonl")
    prompts = _judge_prompts(judge_prompts) if judge_prompts else None
    style = _judge_style(judge_style, prompts, judge_prompts)
    if style == "published":
        _check_published_domains(prompts, {r.domain for r in loaded.records.values()})
    scorers: list[Any] = []
    judge_config = GenerationConfig(temperature=judge_temperature, max_tokens=judge_max_tokens)
    specs = [None if text.strip() == "rules" else backend_spec(text, allow_label=True, flag="--judge")
             for text in judges or ["rules"]]
    for spec in specs:
        if spec is None:
            scorers.append(RuleScorer())
            continue
        wm = WorldModel(open_backend(spec, exec_config), cache=open_cache(cache, cache_mode), concurrency=concurrency)
        scorers.append(LLMJudge(wm, name=spec.label, retries=retries, config=judge_config, prompts=prompts, style=style))
    try:
        distinct_judge_names(scorers)
    except JudgeNameClash as exc:
        raise fail(str(exc), "name them: --judge A=openai:MODEL@URL --judge B=openai:MODEL@URL") from None
    with progress(TextColumn("{task.fields[stats]}")) as bar:
        task = bar.add_task("judge", total=None, stats="")

        def show(p) -> None:
            bar.update(task, total=p.total, completed=p.done + p.skipped, stats=f"failed {p.failed} tok {p.prompt_tokens + p.completion_tokens:,}")

        async def go():
            try:
                return await run_judging(
                    scorers, samples, list(loaded.records.values()), out_path,
                    concurrency=concurrency, rejudge=rejudge, retry_failed=retry_failed, overwrite=overwrite, on_progress=show,
                )
            finally:
                for s in scorers:
                    if hasattr(s, "aclose"):
                        await s.aclose()

        result = run_guarded(go)
    if result.missing_samples:
        console.print(f"[yellow]{result.missing_samples} predictions have no sample in {bench}; not judged[/]")
    out.print(f"{out_path}: {result.done} verdicts, {result.skipped} already there, {result.failed} failed, "
              f"{result.left_out} predictions left out (failed calls or no answer: not judged, counted apart)")


def _judge_prompts(folder: Path):
    from agentworld.judge.prompt import JUDGE_PROMPT_FILE, load_judge_prompts

    try:
        prompts = load_judge_prompts(folder)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(str(exc), f"give a folder with <domain>/{JUDGE_PROMPT_FILE} files") from None
    console.print(f"judge system prompts from {folder}: {', '.join(sorted(prompts.texts))}")
    if prompts.user_template_source is not None:
        console.print(f"judge user template from {prompts.user_template_source}")
    return prompts


def _judge_style(style: str | None, prompts, folder: Path | None) -> str:
    """The judge request style: published by default with the published prompts, else ours."""
    from agentworld.judge.llm import JUDGE_STYLES
    from agentworld.judge.prompt import USER_TEMPLATE_FILE, USER_TEMPLATE_MODULE, USER_TEMPLATE_NAME

    if style is not None and style not in JUDGE_STYLES:
        raise fail(f"unknown --judge-style {style!r}", f"choose {' or '.join(JUDGE_STYLES)}")
    style = style or ("published" if prompts is not None else "agentworld")
    if style == "published" and prompts is None:
        raise fail("--judge-style published needs the published judge prompts", "pass --judge-prompts FOLDER (your copy of the release's prompts/)")
    if style == "published" and prompts.user_template is None:
        raise fail(
            f"no published judge user template found for {folder}",
            f"put it in {folder}/{USER_TEMPLATE_FILE}, or keep the release's eval/{USER_TEMPLATE_MODULE} "
            f"(it defines {USER_TEMPLATE_NAME}) beside the prompts folder; or pass --judge-style agentworld "
            "to send our user message with these system prompts",
        )
    if style == "agentworld" and prompts is not None and prompts.missing:
        console.print(f"[yellow]no judge system prompt for {', '.join(prompts.missing)}: the built-in judge prompt is used there[/]")
    return style


def _check_published_domains(prompts, domains: set[str]) -> None:
    """The published request sends each domain's own system prompt: every judged domain needs one."""
    from agentworld.judge.prompt import JUDGE_PROMPT_FILE

    lacking = sorted(domains & set(prompts.missing))
    if lacking:
        raise fail(f"no {JUDGE_PROMPT_FILE} for {', '.join(lacking)} in {prompts.folder}, and the predictions hold those domains",
                   "add those files from the release, or pass --judge-style agentworld to use our prompt there")


def _price(pairs: list[str] | None) -> dict[str, tuple[float, float]]:
    prices = {}
    for pair in pairs or []:
        name, _, value = pair.rpartition("=")
        try:
            p_in, p_out = (float(x) for x in value.split(","))
        except ValueError:
            raise fail(f"bad price {pair!r}", "write NAME=IN,OUT in USD per million tokens, e.g. openai:gpt-x=0.5,1.5") from None
        prices[name] = (p_in, p_out)
    return prices


_ALWAYS = {"domain", "total", "valid", "judge failed", "no answer", "call failed"}
# Short headers so the table fits an 80-column terminal; the report spells them out.
_SHORT = {
    "format": "fmt", "factuality": "fact", "consistency": "cons", "realism": "real", "quality": "qual",
    "judge failed": "jfail", "no answer": "noans", "call failed": "cfail", "pred tok": "tok", "judge tok": "jtok",
}


@app.command()
def score(
    judged: Annotated[list[Path], typer.Argument(help="Verdict JSONL files from `bench judge`.")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="Write scores.json, report.md, report.html and charts here.")] = None,
    price: Annotated[list[str] | None, typer.Option(help="NAME=IN,OUT: USD per million tokens for a model or judge (repeatable).")] = None,
    worst: Annotated[int, typer.Option(help="Worst samples shown per model and judge in the report.")] = 5,
) -> None:
    """Per-domain x per-dimension scores, micro and macro overall, the protocol behind them,
    failures and what was left out, tokens, cost and judge agreement."""
    from agentworld.bench.judging import load_judgements
    from agentworld.bench.report import overall_line, protocol_lines, table_rows, write_report
    from agentworld.bench.score import score_records

    missing = [p for p in judged if not p.exists()]
    if missing:
        raise fail(f"no such file: {missing[0]}", "run `agentworld bench judge` first")
    loaded = load_judgements(judged)
    report_line_errors(loaded.errors)
    if not loaded.records:
        raise fail("no verdicts to score", "the files are empty or every line is bad")
    records = list(loaded.records.values())
    report = score_records(records, prices=_price(price))
    for g in report.groups:
        rows = table_rows(g)
        # Columns with nothing to say (no judge tokens, no prices) only cost width here.
        keep = [i for i, c in enumerate(rows[0]) if c in _ALWAYS or any(r[i] not in ("-", "0") for r in rows[1:])]
        table = Table(title=f"{g.model} judged by {g.judge} (0-100)", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for i in keep:
            head = _SHORT.get(rows[0][i], rows[0][i])
            table.add_column(head, justify="left" if i == 0 else "right", min_width=8 if i == 0 else len(head))
        for r in rows[1:]:
            table.add_row(*(r[i] for i in keep), style="bold" if r[0].startswith("overall") else None)
        out.print(table)
        out.print(overall_line(g), markup=False)
        for label, text in protocol_lines(g):
            out.print(f"  {label}: {text}", markup=False, soft_wrap=True)
    for a in report.agreement:
        rho = "-" if a.spearman is None else f"{a.spearman:.3f}"
        out.print(f"agreement {a.model}: {a.judge_a} vs {a.judge_b}: Spearman {rho} over {a.n} samples", markup=False)
    for note in report.notes:
        console.print(f"[dim]{note}[/]")
    if out_dir:
        paths = write_report(report, records, out_dir, worst=worst)
        out.print(f"report: {paths['html']} {paths['markdown']} {paths['json']}")
