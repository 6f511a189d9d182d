"""Reading simulator inputs from files: scenarios, tool sets, perturbation specs, actions,
and the start point (scenario, history, action) of ``agentworld predict``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentworld.jsonl import LineError, iter_json_lines
from agentworld.records.trajectory import Trajectory
from agentworld.sim.scenario import Scenario

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """A simulator input file cannot be used; the message names the file (and line)."""


def read_yaml(path: Path, kind: str) -> Any:
    """The data of a YAML (or JSON) input file; a missing or unparsable file is an
    :class:`InputError` naming it (``kind`` says what the file should hold)."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{kind} file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML/JSON ({exc})") from None


def read_model(path: Path, model: type[M], kind: str) -> M:
    """``model`` from a YAML (or JSON) file (empty: all defaults); errors name the file and
    the line of the first key at fault (an unknown key, a bad value)."""
    data = read_yaml(path, kind)
    try:
        return model.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        line = _yaml_line(path, first["loc"])
        what = "unknown key (a misspelling?)" if first["type"] == "extra_forbidden" else first["msg"]
        raise InputError(f"{path}{f':{line}' if line else ''}: not a {kind}: {where}: {what}"
                         + (f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else "")) from None
    except ValueError as exc:
        raise InputError(f"{path}: not a {kind} ({exc})") from None


def _yaml_line(path: Path, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the key or item at ``loc`` in a YAML file (the deepest found)."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == part), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _find_record(path: str | Path, record_id: str | None, kind: str) -> tuple[int, dict]:
    """``(line number, object)`` of the record ``record_id`` (default: the first) in a
    JSONL file; a missing file, a broken line or no such record is an :class:`InputError`."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{kind} file not found: {path}")
    for lineno, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            raise InputError(str(obj))
        if isinstance(obj, dict) and (record_id is None or str(obj.get("id")) == record_id):
            return lineno, obj
    raise InputError(f"{path}: no {kind}" + (f" with id {record_id!r}" if record_id is not None else ""))


def load_trajectory(path: str | Path, record_id: str | None = None) -> Trajectory:
    """One trajectory from a JSONL file: ``record_id`` or the first valid one."""
    lineno, obj = _find_record(path, record_id, "trajectory")
    try:
        return Trajectory.model_validate(obj)
    except ValueError as exc:
        raise InputError(f"{path}:{lineno}: not a trajectory ({exc})") from None


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from YAML or JSON."""
    return read_model(Path(path), Scenario, "scenario")


def load_tools(path: str | Path) -> list[dict[str, Any]]:
    """Tool schemas: a JSON/YAML list, or ``{"tools": [...]}`` as MCP ``tools/list`` returns."""
    path = Path(path)
    data = read_yaml(path, "tools")
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


#: a session with a person at the keyboard has no turn limit
UNLIMITED_TURNS = 10**6


@dataclass
class Start:
    """Where a prediction or an interactive simulated session starts."""

    scenario: Scenario
    history: list[tuple[str, str]] = field(default_factory=list)
    """Earlier ``(action, observation)`` turns (SimEnv's ``history`` reset option)."""
    action: str | None = None
    """The action to answer, when the file names one (a benchmark sample's current action)."""


def load_start(path: str | Path, *, record_id: str | None = None, turn: int | None = None) -> Start:
    """A start point from a trajectory or AgentWorldBench JSONL file.

    ``record_id`` picks the record (default: the first). For a trajectory, ``turn``
    (1-based) makes the turns before it the history and its action the one to answer;
    without it all turns are history. A benchmark sample gives its own history and action.
    The system prompt is kept exactly as the file implies (a sample's own ``system_str``).
    """
    from agentworld.prompts import trajectory_system_prompt
    from agentworld.records.bench import BenchSample

    lineno, obj = _find_record(path, record_id, "history record")
    try:
        if "system_str" in obj:
            s = BenchSample.model_validate(obj)
            scenario = Scenario(id=str(s.id), domain=s.domain, system=s.system_str, max_turns=UNLIMITED_TURNS)
            # The record's stored responses (markers kept) and prompt[turn_idx - 1]:
            # the model sees exactly what the published evaluation sends.
            return Start(scenario, s.stored_history(), s.turn_prompt)
        traj = Trajectory.model_validate(obj)
        scenario = Scenario.from_trajectory(traj, system=trajectory_system_prompt(traj), max_turns=UNLIMITED_TURNS)
    except ValueError as exc:
        raise InputError(f"{path}:{lineno}: {exc}") from None
    turns = [(t.action, t.observation) for t in traj.turns]
    action = None
    if turn is not None:
        if not 1 <= turn <= len(turns):
            raise InputError(f"{path}:{lineno}: turn {turn} out of range 1..{len(turns)}")
        turns, action = turns[: turn - 1], turns[turn - 1][0]
    return Start(scenario, turns, action)


def fresh_start(domain: str, task: str = "") -> Start:
    """A session from nothing: the domain's default prompt with ``task``."""
    return Start(Scenario(id="session", domain=domain, task=task, max_turns=UNLIMITED_TURNS))
