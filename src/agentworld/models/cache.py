"""A response cache shared by every backend: SQLite in WAL mode, one row per sample.

The key covers everything that changes an answer: backend, model id and revision, the
prompt-template version, the messages, the resolved sampling settings, the seed and the
sample index -- so ``n`` identical calls are ``n`` entries, not one. Modes:

- ``off``: never read or write;
- ``rw``: read hits, store new completions;
- ``replay``: read only, and a miss is an error (:class:`CacheMiss`), never a live call.

Several processes may write the same file at once: WAL lets readers run beside one
writer, and a generous busy timeout makes writers queue instead of failing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentworld.models.base import Completion, GenerationConfig, Message
from agentworld.prompts import PROMPT_VERSION

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    completion TEXT NOT NULL,
    latency_s REAL NOT NULL,
    created_at REAL NOT NULL
)
"""


class CacheMode(StrEnum):
    off = "off"
    rw = "rw"
    replay = "replay"


class CacheMiss(LookupError):
    """Strict replay found no stored response for a request."""


def messages_hash(messages: list[Message]) -> str:
    blob = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def cache_key(
    backend: str, model: str, messages: list[Message], config: GenerationConfig, sample_index: int,
    context: dict[str, Any] | None = None,
) -> str:
    """The key of one sample. ``config`` must be resolved; ``n`` is left out on purpose
    (the sample index already tells samples apart, so n=1 then n=3 reuses sample 0).
    ``context`` is what else the runner decided the answer by (the request's domain, the
    demonstrations setting); left out when empty, so keys without it stay as they were."""
    settings = config.to_dict()
    settings.pop("n", None)
    payload = {
        "backend": backend,
        "model": model,
        "prompt_version": PROMPT_VERSION,
        "messages": messages_hash(messages),
        "settings": settings,
        "seed": config.seed,
        "sample_index": sample_index,
    }
    if context:
        payload["context"] = context
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Completions stored by :func:`cache_key`. Thread-safe; safe across processes."""

    def __init__(self, path: str | Path, mode: CacheMode | str = CacheMode.rw):
        self.path = Path(path)
        self.mode = CacheMode(mode)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if self.mode is not CacheMode.off:
            self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.mode is CacheMode.replay and not self.path.exists():
            raise FileNotFoundError(f"replay cache not found: {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=60000")
        if self.mode is CacheMode.rw:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
        return conn

    @property
    def enabled(self) -> bool:
        return self._conn is not None

    def get(self, key: str) -> tuple[Completion, float] | None:
        """The stored completion and its original latency, or None. Strict replay raises."""
        if self._conn is None:
            return None
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT completion, latency_s FROM responses WHERE key = ?", (key,)
                ).fetchone()
            except sqlite3.OperationalError:
                # A replay file written by an older run may lack the table: every key misses.
                row = None
        if row is None:
            self.misses += 1
            if self.mode is CacheMode.replay:
                raise CacheMiss(
                    f"no cached response for key {key[:16]}... in {self.path} (strict replay: "
                    "run once with the cache in rw mode to record it)"
                )
            return None
        self.hits += 1
        return Completion(**json.loads(row[0])), float(row[1])

    def put(self, key: str, completion: Completion, *, backend: str, model: str, latency_s: float) -> None:
        if self._conn is None or self.mode is not CacheMode.rw:
            return
        blob = json.dumps(asdict(completion), ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (key, backend, model, blob, latency_s, time.time()),
            )

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        return {"path": str(self.path), "mode": self.mode.value, "hits": self.hits, "misses": self.misses}

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
