"""Resumable builder runs: a per-item JSONL log next to the dataset.

Each finished item (a tokenized trajectory, a judged query) is appended and flushed as
soon as it is done; a restarted run reads the log, skips what is there and appends the
rest. The config is saved beside the log and a run with a different config refuses to
mix its items into the old log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentworld.data.config import config_dict
from agentworld.jsonl import JsonlAppender, LineError, iter_json_lines, repair_tail

# Fields that change how fast a run goes or how its result is written, not what it produces.
_SPEED_ONLY = {"workers", "concurrency", "output_format"}


class ConfigChanged(ValueError):
    """The output directory holds a run made with a different config."""


def _comparable(config: Any) -> dict[str, Any]:
    return {k: v for k, v in config_dict(config).items() if k not in _SPEED_ONLY}


class ResumeLog:
    """Items done so far (by key) and an appender for new ones."""

    def __init__(self, out_dir: Path, name: str, config: Any, *, restart: bool = False):
        self.path = out_dir / f"{name}.log.jsonl"
        cfg_path = out_dir / "config.json"
        out_dir.mkdir(parents=True, exist_ok=True)
        current = _comparable(config)
        if restart:
            self.path.unlink(missing_ok=True)
        elif self.path.exists() and cfg_path.exists():
            saved = json.loads(cfg_path.read_text(encoding="utf-8"))
            previous = {k: v for k, v in saved.items() if k not in _SPEED_ONLY}
            changed = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
            if changed:
                raise ConfigChanged(
                    f"{out_dir} holds a run with a different config ({', '.join(changed)} changed)"
                )
        cfg_path.write_text(json.dumps(config_dict(config), indent=1, default=str), encoding="utf-8")
        self.done: dict[str, dict[str, Any]] = {}
        self.errors: list[LineError] = []
        if self.path.exists():
            repair_tail(self.path)
            for _, rec in iter_json_lines(self.path):
                if isinstance(rec, LineError):
                    self.errors.append(rec)
                elif isinstance(rec, dict) and "key" in rec:
                    self.done[rec["key"]] = rec
        self._appender: JsonlAppender | None = None

    def add(self, key: str, record: dict[str, Any]) -> dict[str, Any]:
        if self._appender is None:
            self._appender = JsonlAppender(self.path, fsync=False)
        rec = {"key": key, **record}
        self._appender.append(rec)
        self.done[key] = rec
        return rec

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()

    def __enter__(self) -> ResumeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
