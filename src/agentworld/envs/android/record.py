"""Recording android episodes from a task file: what ``agentworld collect android`` runs.

The task file has one JSON object a line::

    {"id": "alarm-1", "task": "Add an alarm labelled Gym", "app": "com.android.deskclock",
     "split": "train", "actions": [{"action": "tap", "element": 5}, {"action": "type", "text": "Gym"}]}

``app`` (optional) is opened after pressing home; ``split`` is ``train`` (default) or
``test``. Optionally the raw dumps are kept next to the trajectory, in the layout the
``uiautomator`` importer reads (:mod:`agentworld.data.importers.android`).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.envs.agent import AgentConfig
from agentworld.envs.android.actions import parse_action
from agentworld.envs.android.agent import run_agent
from agentworld.envs.android.env import AndroidEnv
from agentworld.envs.record import RecordTurns
from agentworld.records.trajectory import Provenance, Trajectory


@dataclass(frozen=True)
class AndroidTask:
    """One line of the task file."""

    id: str
    task: str
    actions: list[str]
    app: str | None = None
    split: str = "train"


def read_tasks(path: Path, *, need_actions: bool = True) -> list[AndroidTask]:
    """The task file; a bad line is an error naming ``file:line`` (nothing is recorded).
    Without ``need_actions`` (an agent chooses them) a task may leave ``actions`` out."""
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
            tid, text, acts = data.get("id"), data.get("task", ""), data.get("actions", None if need_actions else [])
            if not isinstance(tid, str | int) or isinstance(tid, bool) or not str(tid):
                problems.append(f"{where}: 'id' (a string) is missing")
            elif not isinstance(text, str):
                problems.append(f"{where}: 'task' is not a string")
            elif not isinstance(acts, list) or (need_actions and not acts):
                problems.append(f"{where}: 'actions' is not a non-empty list of actions (or record with --agent)")
            elif not need_actions and not text.strip():
                problems.append(f"{where}: 'task' is empty: the agent needs the task")
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


def record_task(env: AndroidEnv, task: AndroidTask, *, job_id: str, dumps: Path | None = None,
                agent: AgentConfig | None = None) -> Trajectory:
    """One episode: reset (home, then the task's app), then the task's actions, or the
    LLM ``agent``'s when given. With ``dumps``, the raw screens go to ``dumps/<job_id>/``
    (see :func:`write_dumps`)."""
    info = env.device_info()
    prov: dict[str, Any] = {"source": "real", "recorded_from": "device", "device": info, "task": task.id,
                            "environment": f"android/{info['manufacturer']} {info['model']}".strip()}
    if agent is not None:
        traj = asyncio.run(run_agent(env, task.task, agent, trajectory_id=job_id, app=task.app, provenance=prov))
    else:
        rec = RecordTurns(env)
        rec.reset(options={"task": task.task, "app": task.app})
        for action in task.actions:
            res = rec.step(action)
            if res.terminated or res.truncated:
                break
        traj = rec.trajectory(trajectory_id=job_id, provenance=Provenance(**prov, agent="scripted"))
    if dumps is not None:
        # Turns that read the screen again carry its element count; error turns do not.
        moved = [t.action for t in traj.turns if "elements" in t.metadata]
        write_dumps(dumps / job_id, task, env.dumps, moved, info)
    return traj


def write_dumps(folder: Path, task: AndroidTask, raw: list[str], actions: list[str], device: dict[str, str]) -> None:
    """``<n>.xml`` for each screen read and ``episode.json`` with the actions between them
    (actions answered with an error, which left the screen as it was, are left out)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, xml in enumerate(raw):
        (folder / f"{i}.xml").write_text(xml)
    meta = {"id": task.id, "goal": task.task, "actions": [json.loads(a) for a in actions], "device": device}
    (folder / "episode.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")
