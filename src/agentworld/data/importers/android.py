"""Public Android trajectory datasets -> android trajectories.

Every format is a list of screens (view hierarchies) with the action taken on each; screen
``i + 1`` is the observation after action ``i``. Screens are rendered as the domain's
HTML-like elements (:mod:`agentworld.envs.android.render`), actions in its JSON format.
The first screen becomes the initial state (the simulator sees it before the first action).

Formats (``--format``):

``androidcontrol``
    AndroidControl's fields, as JSON: a ``.jsonl`` file with one episode a line, or a
    ``.json`` file holding one episode or a list. An episode has ``episode_id``, ``goal``,
    ``accessibility_trees`` (one ``AndroidAccessibilityForest`` a screen, as proto JSON:
    an object or its JSON text), ``actions`` (one fewer: ``{"action_type": ...}``) and
    optionally ``step_instructions``. The dataset ships as TFRecords of protos: export the
    trees with ``google.protobuf.json_format.MessageToDict`` first (screenshots are not used).
``uiautomator``
    A folder per episode holding its ``uiautomator dump`` files (``*.xml``, in natural
    order: ``2.xml`` before ``10.xml``) and ``episode.json``: ``{"goal": ..., "actions":
    [...]}`` with one action per transition, in the domain's format or AndroidControl's.
    ``PATH`` is such a folder or a folder of them.
``rico``
    RICO interaction traces: a trace folder with ``view_hierarchies/<n>.json`` and
    ``gestures.json`` (``{"<n>": [[x, y], ...]}``, coordinates as fractions of the screen):
    one point is a tap, several a swipe. ``PATH`` is a trace or a folder of traces.

Bad input never stops an import: each bad episode is reported as ``file:line`` (JSONL),
``file`` plus the field path, and skipped (``strict`` stops at the first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld.envs.android.actions import action_json, from_android_control, parse_action, swipe_direction
from agentworld.envs.android.hierarchy import HierarchyError, Screen, parse_forest, parse_nested, parse_uiautomator
from agentworld.envs.android.render import render
from agentworld.records.trajectory import Provenance, Trajectory, Turn

FORMATS = ("androidcontrol", "uiautomator", "rico")


class AndroidImportError(ValueError):
    """One episode that cannot be imported; the message says where and why."""


@dataclass
class ImportReport:
    """Trajectories read, and the episodes skipped with where and why."""

    trajectories: list[Trajectory] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def import_android(paths: list[str | Path], fmt: str, *, strict: bool = False, compact: bool = True) -> ImportReport:
    """Read every episode under ``paths`` in format ``fmt`` (see the module docstring)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown android format {fmt!r} (formats: {', '.join(FORMATS)})")
    reader = {"androidcontrol": _androidcontrol, "uiautomator": _uiautomator, "rico": _rico}[fmt]
    report = ImportReport()
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
        for item in reader(path, compact):
            if isinstance(item, str):
                if strict:
                    raise AndroidImportError(item)
                report.errors.append(item)
            else:
                report.trajectories.append(item)
    return report


def _trajectory(traj_id: str, fmt: str, source: str, goal: str, screens: list[Screen], actions: list[str],
                metadata: list[dict[str, Any]], compact: bool) -> Trajectory:
    shown = [render(s, compact=compact) for s in screens]
    texts = [r.text for r in shown]
    for i, action in enumerate(actions):
        # A gesture at a point: which element of the screen it was on (datasets record points).
        g = parse_action(action)
        if not isinstance(g, str) and g.x is not None and g.y is not None:
            hit = shown[i].element_at(g.x, g.y)
            if hit is not None:
                metadata[i]["element"] = hit.id
    turns = [Turn(action=a, observation=texts[i + 1], metadata=metadata[i]) for i, a in enumerate(actions)]
    return Trajectory(id=traj_id, domain="android", task_description=goal,
                      initial_state=f"The screen shows:\n{texts[0]}",
                      provenance=Provenance(source="import", environment=f"android/{fmt}", task=goal or None,
                                            dataset=fmt, path=source),
                      turns=turns)


def _count_check(where: str, screens: int, actions: int) -> None:
    if screens < 2:
        raise AndroidImportError(f"{where}: {screens} screen(s): an episode needs at least two (one action)")
    if actions != screens - 1:
        raise AndroidImportError(f"{where}: {screens} screens but {actions} actions (one action between two screens)")


# -- AndroidControl -------------------------------------------------------------------------

def _episodes_json(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, episode) of a .jsonl or .json file; a line or file that is not JSON yields (where, error)."""
    files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
    for f in files:
        if f.suffix == ".jsonl":
            with f.open("rb") as fh:
                for n, raw in enumerate(fh, 1):
                    if not raw.strip():
                        continue
                    try:
                        yield f"{f}:{n}", json.loads(raw)
                    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                        yield f"{f}:{n}", AndroidImportError(f"{f}:{n}: not JSON ({exc})")
            continue
        try:
            data = json.loads(f.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            yield str(f), AndroidImportError(f"{f}: not JSON ({exc})")
            continue
        for i, ep in enumerate(data if isinstance(data, list) else [data]):
            yield (f"{f}[{i}]" if isinstance(data, list) else str(f)), ep


def _androidcontrol(path: Path, compact: bool) -> Iterator[Trajectory | str]:
    for where, ep in _episodes_json(path):
        if isinstance(ep, AndroidImportError):
            yield str(ep)
            continue
        try:
            yield _androidcontrol_episode(where, ep, compact)
        except (AndroidImportError, HierarchyError) as exc:
            yield str(exc)


def _field_list(ep: dict[str, Any], name: str, where: str) -> list[Any]:
    value = ep.get(name)
    if not isinstance(value, list):
        raise AndroidImportError(f"{where}: '{name}' is {'missing' if value is None else 'not a list'}")
    return value


def _androidcontrol_episode(where: str, ep: Any, compact: bool) -> Trajectory:
    if not isinstance(ep, dict):
        raise AndroidImportError(f"{where}: an episode is an object")
    ep_id = ep.get("episode_id")
    if ep_id is None:
        raise AndroidImportError(f"{where}: 'episode_id' is missing")
    where = f"{where}: episode {ep_id}"
    trees = _field_list(ep, "accessibility_trees", where)
    raw_actions = _field_list(ep, "actions", where)
    steps = ep.get("step_instructions") or []
    _count_check(where, len(trees), len(raw_actions))
    screens = []
    for i, tree in enumerate(trees):
        if isinstance(tree, str):
            try:
                tree = json.loads(tree)
            except json.JSONDecodeError as exc:
                raise AndroidImportError(f"{where}: accessibility_trees[{i}] is not JSON ({exc})") from None
        screens.append(parse_forest(tree, f"{where}: accessibility_trees[{i}]"))
    actions, meta = [], []
    for i, raw in enumerate(raw_actions):
        try:
            actions.append(from_android_control(raw))
        except ValueError as exc:
            raise AndroidImportError(f"{where}: actions[{i}]: {exc}") from None
        m: dict[str, Any] = {"source_action": raw if isinstance(raw, dict) else json.loads(raw)}
        if i < len(steps) and isinstance(steps[i], str):
            m["step_instruction"] = steps[i]
        meta.append(m)
    goal = ep.get("goal") if isinstance(ep.get("goal"), str) else ""
    return _trajectory(f"androidcontrol-{ep_id}", "androidcontrol", where.split(": ")[0], goal, screens, actions,
                       meta, compact)


# -- uiautomator dumps ------------------------------------------------------------------------

def _natural(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def _episode_dirs(path: Path, marker: str) -> list[Path]:
    if path.is_file():
        return [path.parent]
    if (path / marker).exists():
        return [path]
    found = sorted({p.parent for p in path.rglob(marker)})
    return found


def _uiautomator(path: Path, compact: bool) -> Iterator[Trajectory | str]:
    dirs = _episode_dirs(path, "episode.json")
    if not dirs:
        yield f"{path}: no episode.json found (a uiautomator episode is a folder with episode.json and *.xml dumps)"
    for d in dirs:
        try:
            yield _uiautomator_episode(d, compact)
        except (AndroidImportError, HierarchyError) as exc:
            yield str(exc)


def _domain_action(raw: Any, where: str) -> str:
    """An action in the domain's format (checked) or AndroidControl's (converted)."""
    if isinstance(raw, dict) and "action_type" in raw:
        try:
            return from_android_control(raw)
        except ValueError as exc:
            raise AndroidImportError(f"{where}: {exc}") from None
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    parsed = parse_action(text)
    if isinstance(parsed, str):
        raise AndroidImportError(f"{where}: {parsed}")
    return text


def _uiautomator_episode(d: Path, compact: bool) -> Trajectory:
    meta_path = d / "episode.json"
    try:
        ep = json.loads(meta_path.read_bytes())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AndroidImportError(f"{meta_path}: not JSON ({exc})") from None
    if not isinstance(ep, dict):
        raise AndroidImportError(f"{meta_path}: an object with 'goal' and 'actions'")
    raw_actions = _field_list(ep, "actions", str(meta_path))
    dumps = sorted(d.glob("*.xml"), key=_natural)
    _count_check(str(d), len(dumps), len(raw_actions))
    screens = [parse_uiautomator(p.read_bytes(), str(p)) for p in dumps]
    actions = [_domain_action(a, f"{meta_path}: actions[{i}]") for i, a in enumerate(raw_actions)]
    meta = [{"screen": dumps[i + 1].name} for i in range(len(actions))]
    goal = ep.get("goal") or ep.get("task") or ""
    return _trajectory(f"uiautomator-{ep.get('id') or d.name}", "uiautomator", str(d), str(goal), screens, actions,
                       meta, compact)


# -- RICO traces --------------------------------------------------------------------------------

def _rico(path: Path, compact: bool) -> Iterator[Trajectory | str]:
    dirs = _episode_dirs(path, "gestures.json")
    if not dirs:
        yield f"{path}: no gestures.json found (a RICO trace is a folder with gestures.json and view_hierarchies/)"
    for d in dirs:
        try:
            yield _rico_trace(d, compact)
        except (AndroidImportError, HierarchyError) as exc:
            yield str(exc)


def _rico_trace(d: Path, compact: bool) -> Trajectory:
    gpath = d / "gestures.json"
    try:
        gestures = json.loads(gpath.read_bytes())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AndroidImportError(f"{gpath}: not JSON ({exc})") from None
    if not isinstance(gestures, dict):
        raise AndroidImportError(f"{gpath}: an object mapping screen numbers to gesture points")
    files = {p.stem: p for p in (d / "view_hierarchies").glob("*.json")}
    order = sorted(files, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    screens: list[Screen] = []
    for name in order:
        p = files[name]
        try:
            data = json.loads(p.read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise AndroidImportError(f"{p}: not JSON ({exc})") from None
        screens.append(parse_nested(data, str(p)))
    actions, meta = [], []
    for name in order[:-1]:
        points = gestures.get(name)
        where = f"{gpath}: screen {name}"
        if not isinstance(points, list) or not points or not all(
                isinstance(pt, list) and len(pt) == 2 and all(isinstance(v, int | float) for v in pt) for pt in points):
            raise AndroidImportError(f"{where}: a gesture is a non-empty list of [x, y] points")
        root = screens[order.index(name)].roots[0]
        width, height = (root.bounds[2], root.bounds[3]) if root.bounds else (1440, 2560)
        if len(points) == 1 or points[0] == points[-1]:
            actions.append(action_json(action="tap", x=round(points[0][0] * width), y=round(points[0][1] * height)))
        else:
            actions.append(action_json(action="swipe", direction=swipe_direction(points[0], points[-1])))
        meta.append({"screen": name, "source_gesture": points})
    _count_check(str(d), len(screens), len(actions))
    return _trajectory(f"rico-{d.name}", "rico", str(d), "", screens, actions, meta, compact)
