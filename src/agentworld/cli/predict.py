"""``agentworld predict`` and ``agentworld serve``: use a world model directly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer
from rich.panel import Panel

from agentworld.cli._common import console, fail, out

app = typer.Typer(
    help="Predict the next observation for an action, or run an interactive simulated session.",
    no_args_is_help=True,
)

BACKEND_HELP = "openai | hf | smol | retrieval"


def make_backend(
    name: str,
    *,
    model: str | None = None,
    path: Path | None = None,
    adapter: Path | None = None,
    source: Path | None = None,
    domain: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    precision: str | None = None,
) -> Any:
    """Build a backend from CLI flags, turning setup problems into clean errors."""
    from agentworld.models import BACKENDS, load_backend

    options: dict[str, dict[str, Any]] = {
        "openai": {"model": model, "base_url": base_url, "api_key": api_key},
        "hf": {"path": path, "adapter": adapter, "precision": precision},
        "smol": {"adapter": adapter, "precision": precision},
        "retrieval": {"source": source, "domain": domain},
    }
    if name not in BACKENDS:
        raise fail(f"unknown backend {name!r}", f"choose one of: {BACKEND_HELP}")
    if name == "hf" and path is None:
        raise fail("the hf backend needs --path", "point --path at a Hugging Face checkpoint folder")
    if name == "retrieval" and source is None:
        raise fail("the retrieval backend needs --source", "point --source at a trajectory file or benchmark directory")
    try:
        with console.status(f"loading the {name} backend..."):
            return load_backend(name, **options[name])
    except (FileNotFoundError, ValueError, ImportError, RuntimeError) as exc:
        raise fail(f"cannot load the {name} backend: {exc}", "check the backend flags (agentworld predict --help)") from None


def _config(temperature: float | None, top_p: float | None, max_tokens: int | None, seed: int | None, n: int | None):
    from agentworld.models import GenerationConfig

    return GenerationConfig(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, n=n)


def _show(pred: Any, show_reasoning: bool) -> None:
    if pred.error:
        console.print(f"[bold red]call failed:[/] {pred.error}")
        return
    if show_reasoning and pred.reasoning:
        console.print(Panel(pred.reasoning, title="reasoning", border_style="dim"))
    if pred.ok:
        out.print(pred.observation, markup=False, highlight=False)
    else:
        console.print(f"[yellow]{pred.status.value} answer[/] (no closed <predicted_observation> block); raw text:")
        out.print(pred.text, markup=False, highlight=False)
    tokens = f", {pred.completion_tokens} tokens" if pred.completion_tokens is not None else ""
    console.print(f"[dim]{pred.backend} {pred.model}: {pred.latency_s:.2f}s{tokens}{', cached' if pred.cached else ''}[/]")


@app.callback(invoke_without_command=True)
def predict(
    action: str = typer.Option(None, "--action", "-a", help="The action to answer (default: the history file's own)."),
    history: Path = typer.Option(None, "--history", help="Trajectory or AgentWorldBench JSONL file to start from."),
    record_id: str = typer.Option(None, "--id", help="Record id in the history file (default: the first)."),
    turn: int = typer.Option(None, "--turn", help="Trajectory turn to predict (1-based); earlier turns are history."),
    domain: str = typer.Option(None, "--domain", "-d", help="Domain, when starting without a history file."),
    task: str = typer.Option("", "--task", help="Task description for a fresh session's system prompt."),
    interactive: bool = typer.Option(False, "--interactive", "-i", help="Type actions, see predicted observations."),
    backend: str = typer.Option("smol", "--backend", "-b", help=BACKEND_HELP),
    model: str = typer.Option(None, "--model", help="openai: model name (or AGENTWORLD_MODEL)."),
    path: Path = typer.Option(None, "--path", help="hf: checkpoint folder."),
    adapter: Path = typer.Option(None, "--adapter", help="hf/smol: PEFT adapter folder."),
    source: Path = typer.Option(None, "--source", help="retrieval: trajectory file/dir or benchmark dir to index."),
    base_url: str = typer.Option(None, "--base-url", help="openai: endpoint (or AGENTWORLD_BASE_URL)."),
    api_key: str = typer.Option(None, "--api-key", help="openai: key (or OPENAI_API_KEY)."),
    precision: str = typer.Option(None, "--precision", help="hf/smol: auto | fp32 | bf16 | autocast."),
    temperature: float = typer.Option(None, "--temperature", "-t"),
    top_p: float = typer.Option(None, "--top-p"),
    max_tokens: int = typer.Option(None, "--max-tokens"),
    seed: int = typer.Option(None, "--seed"),
    n: int = typer.Option(None, "-n", help="Number of predictions."),
    cache: Path = typer.Option(None, "--cache", help="SQLite response cache file."),
    cache_mode: str = typer.Option("rw", "--cache-mode", help="off | rw | replay"),
    as_json: bool = typer.Option(False, "--json", help="Print each prediction as one JSON line."),
    show_reasoning: bool = typer.Option(False, "--reasoning", help="Show the model's reasoning."),
) -> None:
    """Predict the next observation for one action, or run an interactive simulated session."""
    from agentworld.models import ResponseCache, WorldModel
    from agentworld.models.session import HistoryError, Session, fresh_start, load_history

    try:
        if history is not None:
            start = load_history(history, record_id=record_id, turn=turn)
        elif domain:
            start = fresh_start(domain, task)
        else:
            raise fail("nothing to start from", "pass --history FILE or --domain NAME")
    except (HistoryError, ValueError) as exc:
        raise fail(str(exc), "use a trajectory or AgentWorldBench JSONL file, and a known --domain") from None
    action = action if action is not None else start.action
    if action is None and not interactive:
        raise fail("no action to answer", "pass --action TEXT, a --turn of the trajectory, or --interactive")
    try:
        response_cache = ResponseCache(cache, mode=cache_mode) if cache else None
    except (FileNotFoundError, ValueError) as exc:
        raise fail(f"cannot open the cache: {exc}", "--cache-mode is off, rw or replay; replay needs an existing file") from None
    wm = WorldModel(
        make_backend(
            backend, model=model, path=path, adapter=adapter, source=source, domain=domain,
            base_url=base_url, api_key=api_key, precision=precision,
        ),
        cache=response_cache,
    )
    session = Session(wm, start, _config(temperature, top_p, max_tokens, seed, n))
    try:
        if interactive:
            asyncio.run(_interactive(session, action, show_reasoning))
        else:
            preds = asyncio.run(wm.predict(session.messages(action), session.config))
            for pred in preds:
                if as_json:
                    typer.echo(pred.model_dump_json())
                else:
                    _show(pred, show_reasoning)
            if all(p.error for p in preds):
                raise typer.Exit(1)
    finally:
        asyncio.run(wm.aclose())


HELP = ":undo drops the last turn, :history shows the turns, :save FILE writes a trajectory, :quit (or Ctrl-D) ends"


async def _interactive(session: Any, first: str | None, show_reasoning: bool) -> None:
    from agentworld.jsonl import JsonlAppender

    console.print(f"[bold]{session.start.domain}[/] session with {session.wm.model_id}; {len(session.history)} turns of history.")
    console.print(f"[dim]{HELP}[/]")
    pending = first
    while True:
        if pending is None:
            try:
                pending = console.input("[bold cyan]action>[/] ")
            except EOFError:
                return
        line, pending = pending.strip(), None
        if not line:
            continue
        if line in (":q", ":quit", ":exit"):
            return
        if line == ":undo":
            dropped = session.undo()
            console.print("[dim]dropped the last turn[/]" if dropped else "[dim]nothing to undo[/]")
        elif line == ":history":
            for i, (a, o) in enumerate(session.history, 1):
                console.print(f"[bold]{i}>[/] {a}")
                out.print(o, markup=False, highlight=False)
        elif line.startswith(":save"):
            target = line[len(":save") :].strip()
            if not target:
                console.print("[yellow]usage:[/] :save FILE")
                continue
            with JsonlAppender(target) as fh:
                fh.append(session.to_trajectory())
            console.print(f"[green]saved[/] {len(session.history)} turns to {target}")
        elif line.startswith(":"):
            console.print(f"[yellow]unknown command[/] {line}; {HELP}")
        else:
            _show(await session.step(line), show_reasoning)


def serve(
    backend: str = typer.Option("smol", "--backend", "-b", help=BACKEND_HELP),
    model: str = typer.Option(None, "--model", help="openai: upstream model name."),
    path: Path = typer.Option(None, "--path", help="hf: checkpoint folder."),
    adapter: Path = typer.Option(None, "--adapter", help="hf/smol: PEFT adapter folder."),
    source: Path = typer.Option(None, "--source", help="retrieval: trajectory file/dir or benchmark dir to index."),
    domain: str = typer.Option(None, "--domain", help="retrieval: fix the domain index."),
    base_url: str = typer.Option(None, "--base-url", help="openai: upstream endpoint."),
    api_key: str = typer.Option(None, "--api-key", help="openai: upstream key."),
    precision: str = typer.Option(None, "--precision", help="hf/smol: auto | fp32 | bf16 | autocast."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    served_name: str = typer.Option(None, "--served-model-name", help="Model name clients send (default: the model id)."),
    fail_rate: float = typer.Option(0.0, "--fail-rate", help="Share of requests answered 429/503 (for testing clients)."),
    seed: int = typer.Option(0, "--seed", help="Seed that decides which requests --fail-rate fails."),
    fault: str = typer.Option("http", "--fault", help="What --fail-rate injects: http (429/503) | malformed (bad 200 answers) | mixed."),
    delay: float = typer.Option(0.0, "--delay", help="Seconds every answer is held back (to stand in for a remote endpoint)."),
    split_reasoning: bool = typer.Option(False, "--split-reasoning", help="Return <think> blocks as reasoning_content."),
    log_level: str = typer.Option("warning", "--log-level"),
) -> None:
    """Serve a world model at an OpenAI-compatible /v1/chat/completions endpoint."""
    from agentworld.models.serve import create_app, run_server

    if not 0.0 <= fail_rate < 1.0:
        raise fail("--fail-rate must be in [0, 1)")
    if fault not in ("http", "malformed", "mixed") or delay < 0:
        raise fail(f"bad --fault {fault!r} or --delay {delay}", "--fault is http, malformed or mixed; --delay is seconds >= 0")
    instance = make_backend(
        backend, model=model, path=path, adapter=adapter, source=source, domain=domain,
        base_url=base_url, api_key=api_key, precision=precision,
    )
    app_ = create_app(
        instance, model_name=served_name, fail_rate=fail_rate, seed=seed, split_reasoning=split_reasoning,
        fault=fault, delay_s=delay,
    )
    console.print(
        f"serving [bold]{served_name or instance.model_id}[/] at http://{host}:{port}/v1 "
        f"(OPENAI_BASE_URL=http://{host}:{port}/v1)"
    )
    run_server(app_, host=host, port=port, log_level=log_level)
