"""``agentworld collect swe``: repair episodes in real repositories with injected bugs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentworld.cli._common import fail
from agentworld.cli.collect._app import (
    Agent,
    AgentNative,
    AgentOpts,
    BenchDir,
    Episodes,
    Out,
    Seed,
    TestEpisodes,
    Workers,
    agent_settings,
    app,
    run_and_report,
    split_jobs,
)


@app.command("swe")
def collect_swe(
    out_path: Out = None,
    episodes: Episodes = 0,
    test_episodes: TestEpisodes = 30,
    seed: Seed = 0,
    workers: Workers = 2,
    bench_dir: BenchDir = None,
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repositories (repeatable).")] = None,
    agent: Agent = "scripted",
    agent_opt: AgentOpts = None,
    agent_native_tools: AgentNative = True,
    max_steps: Annotated[int, typer.Option(help="Most tool calls per LLM episode.")] = 30,
    download: Annotated[bool, typer.Option(help="First fetch the source distributions (needs PyPI access).")] = False,
) -> None:
    """Record repair episodes: a real repository, a seeded bug the tests catch, coding tools."""
    from agentworld.envs.sandbox import Sandbox, SandboxUnavailable
    from agentworld.envs.swe import REPOS, MissingSourceError, SweConfig, SweEnv, repos
    from agentworld.envs.swe.agent import agent_config, run_agent
    from agentworld.envs.swe.scripted import scripted_repair

    unknown = sorted(set(repo or []) - set(REPOS))
    if unknown:
        raise fail(f"unknown repositories: {', '.join(unknown)}", f"choose among {', '.join(REPOS)}")
    settings = agent_settings(agent, agent_opt)
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
    config = SweConfig(repos=tuple(repo or ()) or tuple(REPOS), max_steps=max_steps)
    llm = (agent_config(settings.pop("model"), **settings, max_turns=max_steps, native_tools=agent_native_tools)
           if settings else None)

    def run_one(job: Any) -> Any:  # one sandbox per episode, closed whatever happens
        env = SweEnv(config)
        try:
            if llm is not None:
                import asyncio

                return asyncio.run(run_agent(env, llm, seed=job.seed, trajectory_id=job.job_id))
            return scripted_repair(env, seed=job.seed, trajectory_id=job.job_id)
        finally:
            env.close()

    run_and_report("swe", split_jobs("swe", episodes, test_episodes, seed, ["repair"]), run_one, out_path, workers,
                   bench_dir)
