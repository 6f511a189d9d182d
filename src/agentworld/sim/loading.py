"""Reading simulator inputs from files: scenarios, tool sets, perturbation specs, actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agentworld.jsonl import LineError, iter_json_lines
from agentworld.sim.scenario import Scenario
from agentworld.trajectory import Trajectory


class InputError(ValueError):
    """A simulator input file cannot be used; the message names the file (and line)."""


def load_trajectory(path: str | Path, record_id: str | None = None) -> Trajectory:
    """One trajectory from a JSONL file: ``record_id`` or the first valid one."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"trajectory file not found: {path}")
    for lineno, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            raise InputError(str(obj))
        if not isinstance(obj, dict) or (record_id is not None and str(obj.get("id")) != record_id):
            continue
        try:
            return Trajectory.model_validate(obj)
        except ValueError as exc:
            raise InputError(f"{path}:{lineno}: not a trajectory ({exc})") from None
    raise InputError(f"{path}: no trajectory" + (f" with id {record_id!r}" if record_id else ""))


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from YAML or JSON."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"scenario file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML/JSON ({exc})") from None
    try:
        return Scenario.model_validate(data or {})
    except ValueError as exc:
        raise InputError(f"{path}: not a scenario ({exc})") from None


def load_tools(path: str | Path) -> list[dict[str, Any]]:
    """Tool schemas: a JSON/YAML list, or ``{"tools": [...]}`` as MCP ``tools/list`` returns."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"tools file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid JSON/YAML ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list) or not all(isinstance(t, dict) and ("name" in t or "function" in t) for t in data):
        raise InputError(f"{path}: expected a list of tool schemas, each with a name")
    return data


def load_actions(path: str | Path, record_id: str | None = None) -> list[str]:
    """Actions from a trajectory JSONL file (its turns' actions) or a JSON list."""
    path = Path(path)
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"{path}: cannot read actions ({exc})") from None
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of actions")
        return [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in data]
    return [t.action for t in load_trajectory(path, record_id).turns]
