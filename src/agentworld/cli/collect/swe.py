"""``agentworld collect swe``: repair episodes in real repositories with injected bugs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentworld.cli._common import fail
from agentworld.cli.collect._app import AgentNative, Collection, collect_command


@collect_command("swe", episodes=0, test_episodes=30)
def collect_swe(
    collection: Collection,
    repo: Annotated[list[str] | None, typer.Option(help="Restrict to these repositories (repeatable).")] = None,
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
    settings = collection.agent_settings()
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
            options = {"repo": job.task}  # repositories are the templates the split holds out
            if llm is not None:
                import asyncio

                return asyncio.run(run_agent(env, llm, seed=job.seed, trajectory_id=job.job_id, options=options))
            return scripted_repair(env, seed=job.seed, trajectory_id=job.job_id, options=options)
        finally:
            env.close()

    collection.run("swe", sorted(REPOS), run_one, repo)
