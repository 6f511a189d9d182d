"""``agentworld collect terminal``: record episodes in real sandboxed Debian shells."""

from __future__ import annotations

import signal
import sys
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail
from agentworld.cli.collect._app import Collection, Templates, collect_command


def terminal_prereqs() -> list[str]:
    """What a node lacks to run terminal sandboxes: the host checks and a built root filesystem."""
    from agentworld.envs.sandbox import SandboxUnavailable, ensure_rootfs
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
        ensure_rootfs(build=False)
    except SandboxUnavailable as exc:
        return [f"{exc.message} ({exc.fix})"]
    return []


@collect_command("terminal", episodes=20, test_episodes=60)
def collect_terminal(
    collection: Collection,
    template: Templates = None,
    build: Annotated[bool, typer.Option("--build/--no-build",
                                        help="Build the sandbox root filesystem first if it is missing.")] = True,
    max_steps: Annotated[int, typer.Option(help="Agent episodes: most actions per episode.")] = 15,
) -> None:
    """Record terminal episodes: a real shell in tmux inside a bwrap sandbox per episode.

    Whole templates are held out for the test split (agentworld.envs.split); each split
    cycles through its own templates. Held-out episodes become benchmark samples (first,
    last and three middle turns) in --bench-dir.
    """
    from agentworld.envs.sandbox import SandboxUnavailable, ensure_rootfs
    from agentworld.envs.sandbox.prereq import check_host
    from agentworld.envs.terminal import TEMPLATES, TerminalEnv
    from agentworld.envs.terminal.drivers import AgentConfig, run_agent, run_scripted

    for name in template or []:
        if name not in TEMPLATES.names():
            raise fail(f"unknown terminal task template {name!r}", f"choose from: {', '.join(TEMPLATES.names())}")
    settings = collection.agent_settings()
    try:
        check_host()
        if not build:
            ensure_rootfs(build=False)
        else:
            with console.status("preparing the sandbox root filesystem (debootstrap, a few minutes the first time)"):
                ensure_rootfs()
    except SandboxUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    config = AgentConfig(**settings, max_turns=max_steps) if settings else None

    def run_one(job: Any) -> Any:
        task = TEMPLATES.get(job.task).instance(job.seed)
        with TerminalEnv() as env:
            if config is None:
                return run_scripted(env, task, seed=job.seed, trajectory_id=job.job_id)
            import asyncio

            # Worker threads own no event loop; the episode ends before its sandbox closes.
            return asyncio.run(run_agent(env, task, config, seed=job.seed, trajectory_id=job.job_id))

    # SIGTERM ends the run like Ctrl-C: running episodes finish and tear their sandboxes down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    collection.run("terminal", TEMPLATES.names(), run_one, template, TEMPLATES.families(), prereq=terminal_prereqs)
