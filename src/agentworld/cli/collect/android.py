"""``agentworld collect android``: record episodes on a real device or emulator over adb.

No emulator runs on the project's machines: the user attaches one (``adb devices``) and
gives the episodes as a task file (its lines: :mod:`agentworld.envs.android.record`); the
actions are the file's or an LLM agent's (``--agent openai:MODEL@URL``). A rerun records
only the ids the output lacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail
from agentworld.cli.collect._app import OUT_DIR, AgentOpts, BenchDir, Out, agent_settings, app, run_and_report


@app.command("android")
def collect_android(
    tasks: Annotated[Path, typer.Option("--tasks", help="Task file (JSONL): id, task, actions, optional app and split.",
                                        exists=True, dir_okay=False)],
    serial: Annotated[str | None, typer.Option(help="Device serial (see `adb devices`); default: the only one attached.")] = None,
    out_path: Out = None,
    bench_dir: BenchDir = None,
    app_name: Annotated[list[str] | None, typer.Option("--app", metavar="NAME=PACKAGE",
                                                       help="An app name the actions use and its package (repeatable).")] = None,
    settle: Annotated[float, typer.Option(help="Seconds to wait after a gesture before reading the screen.")] = 1.0,
    adb: Annotated[str | None, typer.Option(help="The adb executable (default: adb on PATH).")] = None,
    agent: Annotated[str, typer.Option("--agent", metavar="scripted|SPEC", help=(
        "`scripted`: the task file's actions; or an LLM agent named by a backend spec, openai:MODEL@URL, "
        "that reads each screen and chooses the gestures (the tasks' actions are then ignored)."))] = "scripted",
    agent_opt: AgentOpts = None,
    max_steps: Annotated[int, typer.Option(help="Agent episodes: most gestures per episode.")] = 20,
    dumps: Annotated[Path | None, typer.Option(help=(
        "Also keep the raw uiautomator dumps: DIR/<id>/<n>.xml + episode.json, which "
        "`agentworld data import android --format uiautomator` reads back."))] = None,
) -> None:
    """Record android episodes on a device or emulator: each action runs over adb and the
    screen's view hierarchy (uiautomator dump) that follows is recorded as HTML-like elements.

    Provenance records the device: serial, Android version, SDK level, model.
    """
    from agentworld.envs.android.adb import AdbUnavailable, connect
    from agentworld.envs.android.env import AndroidEnv
    from agentworld.envs.android.record import read_tasks, record_task
    from agentworld.envs.collect import EpisodeJob

    apps = {}
    for item in app_name or []:
        name, sep, package = item.partition("=")
        if not sep or not name.strip() or not package.strip():
            raise fail(f"--app {item!r} is not NAME=PACKAGE", "e.g. --app Clock=com.google.android.deskclock")
        apps[name.strip()] = package.strip()
    settings = agent_settings(agent, agent_opt)
    config = None
    if settings is not None:
        from agentworld.envs.agent import AgentConfig

        config = AgentConfig(**settings, max_turns=max_steps)
    try:
        episodes = read_tasks(tasks, need_actions=config is None)
    except ValueError as exc:
        raise fail(f"bad task file:\n{exc}", "each line: {\"id\": ..., \"task\": ..., \"actions\": [...]}") from None
    if not episodes:
        raise fail(f"{tasks}: no tasks", "one JSON object a line")
    try:
        device = connect(serial, adb_path=adb)
    except AdbUnavailable as exc:
        raise fail(exc.message, exc.fix) from None
    console.print(f"recording on {device.serial}")
    by_id = {t.id: t for t in episodes}

    def run_one(job: Any) -> Any:
        env = AndroidEnv(device=device, settle_s=settle, apps=apps)
        with env:
            return record_task(env, by_id[job.job_id], job_id=job.job_id, dumps=dumps, agent=config)

    jobs = [EpisodeJob(job_id=t.id, seed=0, split=t.split, task=t.id) for t in episodes]
    # One device: one episode at a time.
    run_and_report("android", jobs, run_one, out_path or OUT_DIR / "android.jsonl", 1, bench_dir)
