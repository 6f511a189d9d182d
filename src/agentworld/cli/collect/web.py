"""``agentworld collect web``: record browser episodes in real Chromium on loopback sites."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail
from agentworld.cli.collect._app import Collection, Templates, collect_command


@collect_command("web", episodes=40, test_episodes=40)
def collect_web(
    collection: Collection,
    template: Templates = None,
    max_steps: Annotated[int, typer.Option(help="Most actions per episode.")] = 20,
    episode_timeout: Annotated[float, typer.Option(help="Seconds an episode may run before it is stopped "
                                                        "(recorded as failed, retried by the next run).")] = 300.0,
) -> None:
    """Record web episodes: Debian's Chromium (headless, reaching only the loopback sites) on
    Datasette over the Python docs index, the Python docs and MiniWoB++ pages.

    Whole templates are held out for the test split (agentworld.envs.split; every family of
    templates keeps a training one); held-out episodes become benchmark samples in --bench-dir.
    """
    from agentworld.envs.agent import AgentConfig
    from agentworld.envs.web import Sites, SitesUnavailable, WebEnv
    from agentworld.envs.web.browser import CHROMIUM
    from agentworld.envs.web.episode import run_agent, run_scripted
    from agentworld.envs.web.tasks import TEMPLATES, make_task, template_families

    for name in template or []:
        if name not in TEMPLATES:
            raise fail(f"unknown web task template {name!r}", f"choose from: {', '.join(TEMPLATES)}")
    if not CHROMIUM.exists():
        raise fail(f"{CHROMIUM} is missing", "apt-get install chromium (or run scripts/setup.sh); never `playwright install`")
    settings = collection.agent_settings()
    config = AgentConfig(**settings, max_turns=max_steps, native_tools=False) if settings else None
    try:
        with console.status("starting the loopback sites (Datasette, the Python docs, MiniWoB++)"):
            sites = Sites()
    except SitesUnavailable as exc:
        raise fail(str(exc), "run scripts/setup.sh") from None

    def run_one(job: Any) -> Any:  # one browser per episode; the read-only sites are shared
        task = make_task(job.seed, job.task)
        with WebEnv(sites=sites) as env:
            if config is None:
                return run_scripted(env, task, trajectory_id=job.job_id, seed=job.seed, max_turns=max_steps,
                                    timeout_s=episode_timeout)
            import asyncio

            return asyncio.run(run_agent(env, task, config, trajectory_id=job.job_id, seed=job.seed,
                                         timeout_s=episode_timeout))

    with sites:
        collection.run("web", sorted(TEMPLATES), run_one, template, template_families())
