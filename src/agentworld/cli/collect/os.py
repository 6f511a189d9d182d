"""``agentworld collect os``: record episodes on a real desktop (Xvfb, AT-SPI) in a sandbox."""

from __future__ import annotations

import signal
import sys
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail
from agentworld.cli.collect._app import Collection, Templates, collect_command


def os_prereqs() -> list[str]:
    """What a node lacks to run desktop sandboxes: the host checks and a built desktop root."""
    from agentworld.envs.os.rootfs import desktop_rootfs
    from agentworld.envs.sandbox import SandboxUnavailable
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
        desktop_rootfs(build=False)
    except SandboxUnavailable as exc:
        return [f"{exc.message} ({exc.fix})"]
    return []


@collect_command("os", episodes=20, test_episodes=40)
def collect_os(
    collection: Collection,
    template: Templates = None,
    build: Annotated[bool, typer.Option("--build/--no-build",
                                        help="Build the desktop root filesystem first if it is missing.")] = True,
    max_steps: Annotated[int, typer.Option(help="Agent episodes: most actions per episode.")] = 15,
    episode_timeout: Annotated[float, typer.Option(help="Wall-clock seconds one episode may take.")] = 300.0,
) -> None:
    """Record desktop episodes: mousepad and galculator under Xvfb in a bwrap sandbox per episode.

    Actions are pyautogui programs; observations are the accessibility tree, the window
    list and the focus. Turns that changed nothing are dropped. Whole templates are held
    out for the test split (agentworld.envs.split); held-out episodes become benchmark
    samples in --bench-dir.
    """
    from agentworld.envs.os import TEMPLATES, DesktopEnv
    from agentworld.envs.os.drivers import AgentConfig, run_agent, run_scripted
    from agentworld.envs.os.rootfs import desktop_rootfs
    from agentworld.envs.sandbox import SandboxUnavailable
    from agentworld.envs.sandbox.prereq import check_host

    for name in template or []:
        if name not in TEMPLATES.names():
            raise fail(f"unknown os task template {name!r}", f"choose from: {', '.join(TEMPLATES.names())}")
    settings = collection.agent_settings()
    try:
        check_host()
        if not build:
            desktop_rootfs(build=False)
        else:
            with console.status("preparing the desktop root filesystem (debootstrap, a few minutes the first time)"):
                desktop_rootfs(build=True)
    except SandboxUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    config = AgentConfig(**settings, max_turns=max_steps) if settings else None

    def run_one(job: Any) -> Any:
        task = TEMPLATES.get(job.task).instance(job.seed)
        # The episode budget: the env truncates at it (each action is also bounded).
        with DesktopEnv(episode_seconds=episode_timeout) as env:
            if config is None:
                return run_scripted(env, task, seed=job.seed, trajectory_id=job.job_id)
            import asyncio

            return asyncio.run(run_agent(env, task, config, seed=job.seed, trajectory_id=job.job_id))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    collection.run("os", TEMPLATES.names(), run_one, template, TEMPLATES.families(), prereq=os_prereqs)
