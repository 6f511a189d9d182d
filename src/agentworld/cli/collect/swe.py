"""``agentworld collect swe``: repair episodes in real repositories with injected bugs."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from agentworld.cli._common import fail
from agentworld.cli.collect._app import app, run_and_report, split_jobs

@app.command("swe")
def collect_swe(
    out: Path = typer.Option(Path("benchmarks/local/trajectories/swe.jsonl"), help="Trajectory JSONL (appended; resumable)."),
    bench_dir: Path = typer.Option(Path("benchmarks/local"), help="Where swe_test.jsonl is (re)written from held-out episodes."),
    episodes: int = typer.Option(0, help="Training episodes (seeds start, start+1, ...)."),
    test_episodes: int = typer.Option(30, help="Held-out episodes, written as benchmark samples."),
    start: int = typer.Option(0, help="First seed index (shift it to collect new episodes)."),
    workers: int = typer.Option(2, help="Episodes recorded in parallel (one sandbox each)."),
    repo: list[str] = typer.Option([], help="Restrict to these repositories (repeatable)."),
    agent: str = typer.Option("scripted", help="`scripted` repair, or `llm` (tool calling through an OpenAI-compatible endpoint)."),
    model: str = typer.Option("", help="Model name for --agent llm."),
    base_url: str = typer.Option("", help="Endpoint for --agent llm (default: $OPENAI_BASE_URL)."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", help="Environment variable holding the API key."),
    max_steps: int = typer.Option(30, help="Most tool calls per LLM episode."),
    download: bool = typer.Option(False, help="First fetch the source distributions (needs PyPI access)."),
) -> None:
    """Record repair episodes: a real repository, a seeded bug the tests catch, coding tools."""
    from agentworld.envs.sandbox import Sandbox, SandboxUnavailable
    from agentworld.envs.swe import REPOS, MissingSourceError, SweConfig, SweEnv, repos
    from agentworld.envs.swe.agent import agent_config, run_agent
    from agentworld.envs.swe.scripted import scripted_repair

    unknown = sorted(set(repo) - set(REPOS))
    if unknown:
        raise fail(f"unknown repositories: {', '.join(unknown)}", f"choose among {', '.join(REPOS)}")
    if agent not in ("scripted", "llm"):
        raise fail(f"unknown agent {agent!r}", "use --agent scripted or --agent llm")
    if agent == "llm" and not model:
        raise fail("--agent llm needs --model", "e.g. --model qwen3 --base-url http://localhost:8000/v1")
    try:
        if download:
            repos.download()
        for spec in REPOS.values():
            repos.sdist_path(spec)
        repos.test_site()
    except MissingSourceError as exc:
        raise fail(str(exc).split("; ")[0], "run `agentworld collect swe --download` (or scripts/setup.sh) once with PyPI access") from None
    try:
        Sandbox().close()  # fail once, with the fix, rather than once per episode
    except SandboxUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    config = SweConfig(repos=tuple(repo) or tuple(REPOS), max_steps=max_steps)
    llm = agent_config(model, base_url=base_url or None, api_key=os.environ.get(api_key_env) or "EMPTY", max_turns=max_steps)

    def run_one(job):  # one sandbox per episode, closed whatever happens
        env = SweEnv(config)
        try:
            if agent == "llm":
                import asyncio

                return asyncio.run(run_agent(env, llm, seed=job.seed, trajectory_id=job.job_id))
            return scripted_repair(env, seed=job.seed, trajectory_id=job.job_id)
        finally:
            env.close()

    run_and_report("swe", split_jobs("swe", episodes, test_episodes, start, ["repair"]), run_one, out, workers,
                   bench_dir)
