"""``agentworld predict`` and ``agentworld serve``: use a world model directly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer
from rich.panel import Panel

from agentworld.cli._backend import BackendOpt, OptsOpt, load_cli_backend, open_cache, server_policy
from agentworld.cli._common import AllowHostOpt, AllowOriginOpt, console, fail, out

app = typer.Typer(
    help="Predict the next observation for an action, or run an interactive simulated session.",
    no_args_is_help=True,
)

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
        if pred.status.value == "untagged":
            console.print("[yellow]untagged answer[/] (no <predicted_observation> block; the text is used, as evaluation scores it)")
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
    backend: BackendOpt = "smol",
    opt: OptsOpt = None,
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
    from agentworld.models import WorldModel
    from agentworld.sim import SimEnv
    from agentworld.sim.loading import InputError, fresh_start, load_start

    try:
        if history is not None:
            start = load_start(history, record_id=record_id, turn=turn)
        elif domain:
            start = fresh_start(domain, task)
        else:
            raise fail("nothing to start from", "pass --history FILE or --domain NAME")
    except (InputError, ValueError) as exc:
        raise fail(str(exc), "use a trajectory or AgentWorldBench JSONL file, and a known --domain") from None
    action = action if action is not None else start.action
    if action is None and not interactive:
        raise fail("no action to answer", "pass --action TEXT, a --turn of the trajectory, or --interactive")
    response_cache = open_cache(cache, cache_mode)
    # A fresh session's --domain also picks the retrieval index, unless the spec fixes one.
    wm = WorldModel(load_cli_backend(backend, opt, domain=domain), cache=response_cache)
    # The simulator plays the session; without the ledger in the prompt the world model
    # sees exactly the start's system prompt and the turns so far.
    env = SimEnv(wm, start.scenario, config=_config(temperature, top_p, max_tokens, seed, n), use_ledger=False)
    env.reset(options={"history": start.history})
    # One event loop for the whole run: the backend's connections belong to it, so they
    # are closed in it too.
    if not asyncio.run(_run(env, action, interactive=interactive, as_json=as_json, show_reasoning=show_reasoning)):
        raise typer.Exit(1)


async def _run(env: Any, action: str | None, *, interactive: bool, as_json: bool, show_reasoning: bool) -> bool:
    """The interactive session, or the predictions for ``action``; False when every call failed."""
    from agentworld.models import CacheMiss

    try:
        if interactive:
            await _interactive(env, action, show_reasoning)
            return True
        try:
            preds = await env.wm.predict(env.messages_for(action), env.config, domain=env.domain)
        except CacheMiss as exc:
            raise fail(str(exc), "record it once with --cache-mode rw") from None
        for pred in preds:
            if as_json:
                typer.echo(pred.model_dump_json())
            else:
                _show(pred, show_reasoning)
        return not all(p.error for p in preds)
    finally:
        await env.wm.aclose()


HELP = ":undo drops the last turn, :history shows the turns, :save FILE writes a trajectory, :quit (or Ctrl-D) ends"


async def _interactive(env: Any, first: str | None, show_reasoning: bool) -> None:
    """Type actions into a SimEnv. A failed prediction is shown and dropped (the session
    goes on); ``:undo`` restores the snapshot taken before the last step."""
    from agentworld.models import CacheMiss
    from agentworld.sim.interactive import UndoableSession

    session = UndoableSession(env)
    console.print(f"[bold]{env.domain}[/] session with {env.wm.model_id}; {env.turn} turns of history.")
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
            if session.undo():
                console.print("[dim]dropped the last turn[/]")
            else:
                console.print("[dim]nothing to undo[/]")
        elif line == ":history":
            for i, t in enumerate(env.state.turns, 1):
                console.print(f"[bold]{i}>[/] {t.action}")
                out.print(t.observation, markup=False, highlight=False)
        elif line.startswith(":save"):
            target = line[len(":save") :].strip()
            if not target:
                console.print("[yellow]usage:[/] :save FILE")
                continue
            session.save(target)
            console.print(f"[green]saved[/] {env.turn} turns to {target}")
        elif line.startswith(":"):
            console.print(f"[yellow]unknown command[/] {line}; {HELP}")
        else:
            try:
                played = await session.step(line)  # a failed prediction never joins the history
            except CacheMiss as exc:
                console.print(f"[bold red]call failed:[/] {exc}")
                continue
            _show_turn(env, played, show_reasoning)


def _show_turn(env: Any, played: Any, show_reasoning: bool) -> None:
    turn, res = played.turn, played.step
    if turn.error and turn.raw is None:
        console.print(f"[bold red]call failed:[/] {turn.error}")
        return
    if show_reasoning and turn.reasoning:
        console.print(Panel(turn.reasoning, title="reasoning", border_style="dim"))
    if turn.error:
        console.print(f"[yellow]{turn.error}[/] (no closed <predicted_observation> block); raw text:")
        out.print(turn.raw, markup=False, highlight=False)
    else:
        out.print(res.observation, markup=False, highlight=False)
    console.print(f"[dim]{env.wm.model_id}: {turn.latency_s:.2f}s{', cached' if res.info['cached'] else ''}[/]")


def serve(
    backend: BackendOpt = "smol",
    opt: OptsOpt = None,
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    served_name: str = typer.Option(None, "--served-model-name", help="Model name clients send (default: the model id)."),
    fail_rate: float = typer.Option(0.0, "--fail-rate", help="Share of requests answered 429/503 (for testing clients)."),
    seed: int = typer.Option(0, "--seed", help="Seed that decides which requests --fail-rate fails."),
    fault: str = typer.Option("http", "--fault", help="What --fail-rate injects: http (429/503) | malformed (bad 200 answers) | mixed."),
    delay: float = typer.Option(0.0, "--delay", help="Seconds every answer is held back (to stand in for a remote endpoint)."),
    split_reasoning: bool = typer.Option(False, "--split-reasoning", help="Return <think> blocks as reasoning_content."),
    log_level: str = typer.Option("warning", "--log-level"),
    token: str = typer.Option(None, "--token", help="Bearer token clients must send as their API key (default: $AGENTWORLD_TOKEN; unset: open)."),
    max_request_bytes: int = typer.Option(1 << 20, "--max-request-bytes", help="Largest request body (413 past it)."),
    allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None,
    max_tokens_limit: int = typer.Option(4096, "--max-tokens-limit", min=1,
                                         help="Most completion tokens one request gets (a larger max_tokens is lowered to it)."),
    max_n: int = typer.Option(8, "--max-n", min=1, help="Most completions (n) one request may ask for (400 past it)."),
    domain: str = typer.Option(None, "--domain", help="Domain of requests that carry no \"domain\" field and no agentworld "
                               "system prompt (retrieval backends answer per domain)."),
) -> None:
    """Serve a world model at an OpenAI-compatible /v1/chat/completions endpoint."""
    from agentworld.domains import DOMAINS
    from agentworld.models.serve import create_app, run_server

    if not 0.0 <= fail_rate < 1.0:
        raise fail("--fail-rate must be in [0, 1)")
    policy = server_policy(token, max_request_bytes, host=host, allow_hosts=allow_host, allow_origins=allow_origin)
    if fault not in ("http", "malformed", "mixed") or delay < 0:
        raise fail(f"bad --fault {fault!r} or --delay {delay}", "--fault is http, malformed or mixed; --delay is seconds >= 0")
    if domain is not None and domain not in DOMAINS:
        raise fail(f"unknown --domain {domain!r}", f"one of {', '.join(DOMAINS)}")
    instance = load_cli_backend(backend, opt)
    app_ = create_app(
        instance, model_name=served_name, fail_rate=fail_rate, seed=seed, split_reasoning=split_reasoning,
        fault=fault, delay_s=delay, policy=policy, max_tokens_limit=max_tokens_limit, max_n=max_n,
        default_domain=domain,
    )
    console.print(
        f"serving [bold]{served_name or instance.model_id}[/] at http://{host}:{port}/v1 "
        f"(OPENAI_BASE_URL=http://{host}:{port}/v1)"
    )
    run_server(app_, host=host, port=port, log_level=log_level, policy=policy)
