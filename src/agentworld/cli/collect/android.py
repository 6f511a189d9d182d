"""``agentworld collect android``: record episodes on a real device or emulator over adb.

No emulator runs on the project's machines: the user attaches one (``adb devices``) and
gives the episodes as a task file, one JSON object a line::

    {"id": "alarm-1", "task": "Add an alarm labelled Gym", "app": "com.android.deskclock",
     "split": "train", "actions": [{"action": "tap", "element": 5}, {"action": "type", "text": "Gym"}]}

``app`` (optional) is opened after pressing home; ``split`` is ``train`` (default) or
``test`` (held out: benchmark samples in --bench-dir). Each action runs on the device and
the screen that follows is recorded. A rerun records only the ids the output lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from agentworld.cli._common import console, fail
from agentworld.cli.collect._app import OUT_DIR, BenchDir, Out, app, run_and_report


@dataclass(frozen=True)
class AndroidTask:
    """One line of the task file."""

    id: str
    task: str
    actions: list[str]
    app: str | None = None
    split: str = "train"
    extra: dict[str, Any] = field(default_factory=dict)


def read_tasks(path: Path) -> list[AndroidTask]:
    """The task file; a bad line is an error naming ``file:line`` (nothing is recorded)."""
    from agentworld.envs.android.actions import parse_action

    tasks: list[AndroidTask] = []
    problems: list[str] = []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"{path}:{n}"
            try:
                data = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                problems.append(f"{where}: not JSON ({exc})")
                continue
            if not isinstance(data, dict):
                problems.append(f"{where}: a task is a JSON object")
                continue
            tid, text, acts = data.get("id"), data.get("task", ""), data.get("actions")
            if not isinstance(tid, str | int) or isinstance(tid, bool) or not str(tid):
                problems.append(f"{where}: 'id' (a string) is missing")
            elif not isinstance(text, str):
                problems.append(f"{where}: 'task' is not a string")
            elif not isinstance(acts, list) or not acts:
                problems.append(f"{where}: 'actions' is not a non-empty list of actions")
            elif data.get("split", "train") not in ("train", "test"):
                problems.append(f"{where}: 'split' is {data.get('split')!r}, not train or test")
            elif data.get("app") is not None and not isinstance(data.get("app"), str):
                problems.append(f"{where}: 'app' is not a string")
            else:
                texts = [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in acts]
                bad = [(i, p) for i, a in enumerate(texts) if isinstance(p := parse_action(a), str)]
                if bad:
                    problems.append(f"{where}: actions[{bad[0][0]}]: {bad[0][1]}")
                elif str(tid) in {t.id for t in tasks}:
                    problems.append(f"{where}: id {tid!r} appears twice (ids are the resume key)")
                else:
                    tasks.append(AndroidTask(id=str(tid), task=text, actions=texts, app=data.get("app"),
                                             split=data.get("split", "train")))
    if problems:
        raise ValueError("\n".join(problems[:20]))
    return tasks


def record_task(env: Any, task: AndroidTask, *, job_id: str) -> Any:
    """One episode: reset (home, then the task's app), every action, the trajectory."""
    from agentworld.envs.record import RecordTurns
    from agentworld.records.trajectory import Provenance

    rec = RecordTurns(env)
    rec.reset(options={"task": task.task, "app": task.app})
    for action in task.actions:
        res = rec.step(action)
        if res.terminated or res.truncated:
            break
    info = env.device_info()
    prov = Provenance(source="real", environment=f"android/{info['manufacturer']} {info['model']}".strip(),
                      task=task.id, agent="scripted", device=info, recorded_from="device")
    return rec.trajectory(trajectory_id=job_id, provenance=prov)


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
) -> None:
    """Record android episodes on a device or emulator: each action runs over adb and the
    screen's view hierarchy (uiautomator dump) that follows is recorded as HTML-like elements.

    Provenance records the device: serial, Android version, SDK level, model.
    """
    from agentworld.envs.android.adb import AdbUnavailable, connect
    from agentworld.envs.android.env import AndroidEnv
    from agentworld.envs.collect import EpisodeJob

    apps = {}
    for item in app_name or []:
        name, sep, package = item.partition("=")
        if not sep or not name.strip() or not package.strip():
            raise fail(f"--app {item!r} is not NAME=PACKAGE", "e.g. --app Clock=com.google.android.deskclock")
        apps[name.strip()] = package.strip()
    try:
        episodes = read_tasks(tasks)
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
            return record_task(env, by_id[job.job_id], job_id=job.job_id)

    jobs = [EpisodeJob(job_id=t.id, seed=0, split=t.split, task=t.id) for t in episodes]
    # One device: one episode at a time.
    run_and_report("android", jobs, run_one, out_path or OUT_DIR / "android.jsonl", 1, bench_dir)
