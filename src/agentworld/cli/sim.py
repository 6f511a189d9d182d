"""``agentworld sim``: serve a world model as an environment, record, replay, measure drift."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.table import Table

from agentworld.cli._backend import BackendOpt, OptsOpt, backend_spec, open_backend, open_cache, server_policy, with_defaults
from agentworld.cli._common import AllowHostOpt, AllowOriginOpt, console, fail, out

T = TypeVar("T")

app = typer.Typer(help="Serve a world model as an environment (Gym-style, HTTP/WebSocket, MCP).", no_args_is_help=True)
world_app = typer.Typer(help="Fictional worlds for search: build a world database and its questions.", no_args_is_help=True)
app.add_typer(world_app, name="world")

# Shared options (typer has no option groups; these keep every command's flags identical).
CACHE = typer.Option(None, "--cache", help="Response cache file (SQLite).")
CACHE_MODE = typer.Option("rw", "--cache-mode", help="rw | replay (strict: a miss is an error) | off")
SCENARIO = typer.Option(None, "--scenario", help="Scenario YAML/JSON file.")
TRAJECTORY = typer.Option(None, "--trajectory", "-t", help="Recorded trajectory JSONL: its context becomes the scenario.")
RECORD_ID = typer.Option(None, "--id", help="Trajectory id in the file (default: the first).")
TOOLS = typer.Option(None, "--tools", help="Tool schemas (JSON/YAML list) for an mcp scenario.")
WORLD = typer.Option(None, "--world", help="Fictional world database (search scenarios, fact checks).")
QUESTION = typer.Option(None, "--question", help="Question id of the world (default: the first).")
PERTURB = typer.Option(None, "--perturbations", "-p", help="Perturbation spec YAML (see configs/perturbations/).")
RESAMPLE = typer.Option(0, "--resample", help="Extra samples to try when a prediction contradicts the ledger.")
TOKEN = typer.Option(None, "--token", help="Bearer token every request must carry (default: $AGENTWORLD_TOKEN; unset: open).")
MAX_REQUEST_BYTES = typer.Option(1 << 20, "--max-request-bytes", help="Largest request body or WebSocket message (413 past it).")
TEMPERATURE = typer.Option(None, "--temperature")
MAX_TOKENS = typer.Option(None, "--max-tokens")


def _world_model(model_spec, cache, cache_mode, *, domain: str | None, concurrency: int = 4):
    """The world model for a parsed ``--backend`` spec (parsed first, so a bad spec fails
    before any scenario or environment work)."""
    from agentworld.models import WorldModel

    # The retrieval index follows the scenario's domain unless the spec fixes one.
    be = open_backend(with_defaults(model_spec, domain=domain))
    return WorldModel(be, cache=open_cache(cache, cache_mode), concurrency=concurrency)


def _checked(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, its :class:`SetupError` (a user mistake) shown as a clean error."""
    from agentworld.sim.inputs import SetupError

    try:
        return fn(*args, **kwargs)
    except SetupError as exc:
        raise fail(str(exc), exc.hint) from None


def _setup(**sources: Any):
    from agentworld.sim.inputs import load_scenario_setup

    return _checked(load_scenario_setup, **sources)


def _perturbations(path: Path | None):
    from agentworld.sim.inputs import load_perturbations

    return _checked(load_perturbations, path)


def _gen(temperature, max_tokens):
    from agentworld.models import GenerationConfig

    return GenerationConfig(temperature=temperature, max_tokens=max_tokens)


@app.command()
def serve(
    backend: BackendOpt = "smol", opt: OptsOpt = None, cache: Path = CACHE, cache_mode: str = CACHE_MODE,
    scenario: Path = SCENARIO, trajectory: Path = TRAJECTORY, record_id: str = RECORD_ID, tools: Path = TOOLS,
    world: Path = WORLD, question: str = QUESTION, perturbations: Path = PERTURB, resample: int = RESAMPLE,
    temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS,
    host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8000, "--port"),
    max_sessions: int = typer.Option(256, "--max-sessions", help="Open sessions at most (more get 503)."),
    max_inflight: int = typer.Option(32, "--max-inflight", help="Steps simulated at once."),
    max_waiting: int = typer.Option(256, "--max-waiting", help="Steps waiting for a slot before 429."),
    concurrency: int = typer.Option(8, "--concurrency", help="Concurrent backend calls."),
    record: Path = typer.Option(None, "--record", help="Append every finished session's trajectory to this JSONL "
                                "(open sessions too, on SIGINT/SIGTERM)."),
    token: str = TOKEN, max_request_bytes: int = MAX_REQUEST_BYTES,
    allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None,
) -> None:
    """Serve sessions over HTTP (/reset /step /state /close) and WebSocket (/ws), OpenEnv style."""
    model_spec = backend_spec(backend, opt)
    policy = server_policy(token, max_request_bytes, host=host, allow_hosts=allow_host, allow_origins=allow_origin)
    from agentworld import serving
    from agentworld.sim.server import create_app
    from agentworld.sim.sessions import Limits, SessionManager

    sc = _setup(scenario=scenario, trajectory=trajectory, record_id=record_id, tools=tools, world=world,
                question=question).scenario
    spec = _perturbations(perturbations)
    wm = _world_model(model_spec, cache, cache_mode, domain=sc.domain, concurrency=concurrency)
    limits = Limits(max_sessions=max_sessions, max_inflight=max_inflight, max_waiting=max_waiting)
    manager = SessionManager(wm, sc, perturbations=spec, config=_gen(temperature, max_tokens),
                             limits=limits, resample=resample, record=record)
    auth = "bearer token required" if policy.token else "no token"
    console.print(f"simulating [bold]{sc.domain}[/] scenario {sc.id!r} with {wm.model_id} on http://{host}:{port} ({auth})")
    # The app's shutdown closes, and so records, every open session.
    serving.run(create_app(manager, policy), host=host, port=port, policy=policy)


@app.command()
def mcp(
    backend: BackendOpt = "smol", opt: OptsOpt = None, cache: Path = CACHE, cache_mode: str = CACHE_MODE,
    scenario: Path = SCENARIO, trajectory: Path = TRAJECTORY, record_id: str = RECORD_ID, tools: Path = TOOLS,
    perturbations: Path = PERTURB, resample: int = RESAMPLE, seed: int = typer.Option(0, "--seed"),
    transport: str = typer.Option("stdio", "--transport", help="stdio | http (streamable HTTP at /mcp)"),
    host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8001, "--port"),
    record: Path = typer.Option(None, "--record", help="Append each client's simulated calls as a trajectory to this JSONL "
                                "(when it is dropped, and on exit, SIGINT or SIGTERM)."),
    max_history: int = typer.Option(50, "--max-history", help="Turns kept in each prompt (the ledger keeps the rest)."),
    max_clients: int = typer.Option(256, "--max-clients", help="Client environments held; the least recently used is ended past it."),
    token: str = TOKEN, max_request_bytes: int = MAX_REQUEST_BYTES,
    allow_host: AllowHostOpt = None, allow_origin: AllowOriginOpt = None,
) -> None:
    """Serve the scenario's tools as an MCP server whose results come from the world model."""
    model_spec = backend_spec(backend, opt)
    from agentworld import serving
    from agentworld.sim import SimEnv
    from agentworld.sim.mcp_facade import SimulatedToolServer
    from agentworld.sim.serve import serve_stdio, trajectory_appender

    if transport not in ("stdio", "http"):
        raise fail(f"unknown transport {transport!r}", "use stdio or http")
    # Host, Origin and token rules are the HTTP transport's (stdio has no network side).
    policy = server_policy(token, max_request_bytes, host=host, allow_hosts=allow_host, allow_origins=allow_origin) \
        if transport == "http" else None
    sc = _setup(scenario=scenario, trajectory=trajectory, record_id=record_id, tools=tools).scenario
    spec = _perturbations(perturbations)
    if max_history < 0 or max_clients < 1:
        raise fail("--max-history must be >= 0 and --max-clients >= 1")
    wm = _world_model(model_spec, cache, cache_mode, domain=sc.domain)
    try:
        facade = SimulatedToolServer(SimEnv(wm, sc, perturbations=spec, resample=resample), seed=seed,
                                     history_turns=max_history, max_clients=max_clients,
                                     on_finish=trajectory_appender(record) if record is not None else None)
    except ValueError as exc:
        raise fail(str(exc), "pass --tools, or a --trajectory that declares tools") from None
    if facade.unchecked:
        console.print(f"[yellow]arguments of {', '.join(facade.unchecked)} are not checked: their inputSchema is not valid JSON Schema[/]")
    if transport == "stdio":
        serve_stdio(facade)
    else:
        console.print(f"MCP (streamable HTTP) on http://{host}:{port}/mcp with {len(facade.tools)} simulated tools")
        serving.run(facade.http_app(host=host, policy=policy), host=host, port=port, policy=policy,
                    on_exit=facade.close_all)


@app.command()
def run(
    actions: Path = typer.Argument(..., help="Actions: a trajectory JSONL (its turns' actions) or a JSON list."),
    backend: BackendOpt = "smol", opt: OptsOpt = None, cache: Path = CACHE, cache_mode: str = CACHE_MODE,
    scenario: Path = SCENARIO, record_id: str = RECORD_ID, tools: Path = TOOLS, world: Path = WORLD,
    question: str = QUESTION, perturbations: Path = PERTURB, resample: int = RESAMPLE,
    temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS, seed: int = typer.Option(0, "--seed"),
    out_path: Path = typer.Option(..., "--out", "-o", help="Append the simulated trajectory to this JSONL file."),
) -> None:
    """Play a sequence of actions in the simulator and record the episode (replayable)."""
    model_spec = backend_spec(backend, opt)
    from agentworld.models import CacheMiss
    from agentworld.sim import SimEnv
    from agentworld.sim.loading import InputError, load_actions
    from agentworld.sim.run import run_episode

    traj = actions if actions.suffix != ".json" and scenario is None and tools is None and world is None else None
    setup = _setup(scenario=scenario, trajectory=traj, record_id=record_id, tools=tools, world=world, question=question)
    try:
        acts = load_actions(actions, record_id)
    except InputError as exc:
        raise fail(str(exc), "give a trajectory JSONL or a JSON list of actions") from None
    spec = _perturbations(perturbations)
    wm = _world_model(model_spec, cache, cache_mode, domain=setup.scenario.domain)
    env = SimEnv(wm, setup.scenario, perturbations=spec, config=_gen(temperature, max_tokens),
                 resample=resample, checks=setup.checks)
    try:
        episode = run_episode(env, acts, out_path, seed=seed, on_reset=_print_observation, on_step=_print_step)
    except CacheMiss as exc:
        raise fail(str(exc), "record the episode once with --cache-mode rw") from None
    console.print(f"recorded {episode.turns} turn(s) to {episode.out_path}")


def _print_observation(observation: str) -> None:
    out.print(observation, markup=False, highlight=False)


def _print_step(action: str, step: Any) -> None:
    console.print(f"[bold cyan]> {action}[/]", markup=True, highlight=False)
    _print_observation(step.observation)
    for inj in step.info["injections"]:
        console.print(f"[magenta]injected {inj['kind']} ({inj['mode']})[/]")
    for c in step.info["ledger_conflicts"]:
        console.print(f"[yellow]ledger conflict {c['kind']} on {c['key']}[/]")


@app.command()
def replay(
    trajectory: Path = typer.Argument(..., help="A simulated trajectory written by `agentworld sim run`."),
    cache: Path = typer.Option(..., "--cache", help="The response cache the episode was recorded with."),
    record_id: str = RECORD_ID, backend: BackendOpt = "smol", opt: OptsOpt = None,
) -> None:
    """Re-run a recorded simulated episode from the cache in strict replay mode and compare."""
    model_spec = backend_spec(backend, opt)
    from agentworld.sim.loading import InputError, load_trajectory
    from agentworld.sim.replay import ReplayMismatch, replay_episode

    try:
        traj = load_trajectory(trajectory, record_id)
    except InputError as exc:
        raise fail(str(exc)) from None
    wm = _world_model(model_spec, cache, "replay", domain=traj.domain)
    from agentworld.models import CacheMiss

    try:
        n = replay_episode(wm, traj)
    except (ReplayMismatch, CacheMiss) as exc:
        raise fail(str(exc), "the cache, backend flags or prompt version differ from the recording") from None
    console.print(f"[green]replayed {n} turn(s) exactly[/]")


@app.command()
def drift(
    env_id: str = typer.Option(..., "--env", help="Real environment id from the agentworld.envs registry (e.g. terminal-v1, fictional-search-v1)."),
    actions: Path = typer.Option(..., "--actions", help="Trajectory JSONL (its actions) or a JSON list of actions."),
    record_id: str = RECORD_ID, backend: BackendOpt = "smol", opt: OptsOpt = None, cache: Path = CACHE, cache_mode: str = CACHE_MODE,
    world: Path = typer.Option(None, "--world", help="Fictional world database (the env's `world` argument)."),
    question: str = typer.Option(None, "--question", help="Question id of the world (the env's `question` argument)."),
    seed: int = typer.Option(0, "--seed"),
    mode: str = typer.Option("forced", "--mode", help="forced (sim sees real history) | free (sim runs on its own)"),
    threshold: float = typer.Option(3.0, "--threshold", help="Rule-score total under which a step diverges."),
    min_factuality: int = typer.Option(3, "--min-factuality", help="Factuality score under which a step diverges."),
    report_path: Path = typer.Option(None, "--report", help="Write the per-step report as JSON."),
    env_kwargs: str = typer.Option(None, "--env-kwargs", help='JSON keyword arguments for the real env, e.g. \'{"servers": ["git"]}\'.'),
    reset_options: str = typer.Option(None, "--reset-options", help="JSON options for the real env's reset (workspace files...), or @file.json."),
) -> None:
    """Run the same actions in a real environment and in the simulator; score each step."""
    model_spec = backend_spec(backend, opt)
    from agentworld.sim.inputs import SetupError
    from agentworld.sim.loading import InputError, load_actions
    from agentworld.sim.run import make_real_env, parse_env_json, run_drift

    try:
        acts = load_actions(actions, record_id)
    except InputError as exc:
        raise fail(str(exc)) from None
    try:
        kwargs, options = parse_env_json(env_kwargs, reset_options)
        if mode not in ("forced", "free"):
            raise SetupError(f"unknown mode {mode!r}", "use forced or free")
        kwargs.update({k: v for k, v in (("world", world), ("question", question)) if v is not None})
        real = make_real_env(env_id, kwargs)
        report = run_drift(real, acts, lambda domain: _world_model(model_spec, cache, cache_mode, domain=domain),
                           env_id=env_id, seed=seed, mode=mode, threshold=threshold,  # type: ignore[arg-type]
                           min_factuality=min_factuality, options=options)
    except SetupError as exc:
        raise fail(str(exc), exc.hint) from None
    table = Table("turn", "score", "diverged", "conflicts", "action", title=f"drift: {env_id} ({mode})")
    for s in report.steps:
        table.add_row(str(s.turn), "-" if s.total is None else f"{s.total:.2f}", "yes" if s.diverged else "",
                      str(s.conflicts), s.action[:60])
    out.print(table)
    console.print(report.summary())
    if report_path:
        report_path.write_text(report.model_dump_json(indent=1), encoding="utf-8")


@world_app.command("build")
def world_build(
    out_path: Path = typer.Option(..., "--out", "-o", help="World database to write (SQLite)."),
    seed: int = typer.Option(0, "--seed"),
    questions: int = typer.Option(20, "--questions", help="Questions to derive from the database."),
) -> None:
    """Build a seeded fictional world and write its questions next to it (*.questions.jsonl)."""
    from agentworld.sim.inputs import build_world_files

    w = build_world_files(out_path, seed=seed, questions=questions)
    console.print(f"world {w.path}: {w.pages} pages, {w.facts} facts, {w.questions} questions")


@world_app.command("show")
def world_show(world: Path = typer.Argument(..., help="World database.")) -> None:
    """List a world's questions and answers."""
    from agentworld.sim.inputs import world_questions

    table = Table("id", "kind", "question", "answers")
    for q in _checked(world_questions, world):
        table.add_row(q.id, q.kind, q.text, "; ".join(q.answers))
    out.print(table)
