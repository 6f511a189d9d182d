"""JSONL reading and writing that never loses a line silently.

A bad line is reported with its file and line number; the other lines still load
unless ``strict=True``. Writes go to a temporary file and are renamed into place,
so a crash mid-write never leaves half a file behind; appends are flushed per line
so a killed run keeps every finished record.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LineError:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class JsonlError(ValueError):
    """Raised in strict mode (or when nothing loaded) with every bad line listed."""

    def __init__(self, errors: list[LineError]):
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"{len(errors)} bad line(s):\n{shown}{more}")


@dataclass
class Loaded(Generic[M]):
    """Records that loaded, with their line numbers, and the lines that did not."""

    items: list[M] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    def __iter__(self) -> Iterator[M]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "<record>"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def iter_json_lines(path: str | Path) -> Iterator[tuple[int, Any | LineError]]:
    """Yield ``(line_number, parsed_json_or_LineError)``; blank lines are skipped."""
    path = Path(path)
    # Bytes, decoded line by line: one bad byte costs its own line, not the whole file.
    with path.open("rb") as fh:
        for lineno, raw_bytes in enumerate(fh, start=1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, LineError(str(path), lineno, f"not UTF-8 (byte 0x{raw_bytes[exc.start]:02x} at column {exc.start + 1})")
                continue
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw)
            except json.JSONDecodeError as exc:
                yield lineno, LineError(str(path), lineno, f"invalid JSON ({exc.msg} at column {exc.colno})")


def read_jsonl(path: str | Path, model: type[M], *, strict: bool = False) -> Loaded[M]:
    """Load every valid line of ``path`` as ``model``; collect the bad ones.

    ``strict=True`` raises :class:`JsonlError` listing every bad line instead.
    """
    out: Loaded[M] = Loaded()
    for lineno, obj in iter_json_lines(path):
        if isinstance(obj, LineError):
            out.errors.append(obj)
            continue
        if not isinstance(obj, dict):
            out.errors.append(LineError(str(path), lineno, f"expected a JSON object, got {type(obj).__name__}"))
            continue
        try:
            out.items.append(model.model_validate(obj))
            out.lines.append(lineno)
        except ValidationError as exc:
            out.errors.append(LineError(str(path), lineno, _describe(exc)))
    if strict and out.errors:
        raise JsonlError(out.errors)
    return out


def dumps(record: BaseModel | dict[str, Any]) -> str:
    """One JSON line. Models that must round-trip exactly define ``to_record()``."""
    if hasattr(record, "to_record"):
        record = record.to_record()
    elif isinstance(record, BaseModel):
        record = record.model_dump(mode="json")
    return json.dumps(record, ensure_ascii=False)


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Atomically (re)write ``path`` with one JSON record per line; returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(dumps(rec))
                fh.write("\n")
                n += 1
        # mkstemp makes 0600 files; give the result the usual mode (or keep the old file's).
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


class JsonlAppender:
    """Append records one line at a time for resumable runs.

    Every line is flushed to the OS at once, so a killed process (kill -9 included) keeps
    every finished record; ``fsync`` runs at most every ``fsync_every_s`` seconds and on
    close (per line it cost ~2 ms each, which dominated short runs), so a power cut may
    lose the last second. A torn last line is reported as a bad line by readers and
    :func:`repair_tail` drops it before appending resumes.
    """

    def __init__(self, path: str | Path, *, fsync: bool = True, fsync_every_s: float = 1.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")
        self._fsync = fsync
        self._fsync_every_s = fsync_every_s
        self._synced_at = time.monotonic()

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()
        if self._fsync and time.monotonic() - self._synced_at >= self._fsync_every_s:
            os.fsync(self._fh.fileno())
            self._synced_at = time.monotonic()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            if self._fsync:
                os.fsync(self._fh.fileno())
            self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_tail(path: Path) -> bool:
    """Cut a torn final line (no trailing newline) left by a killed writer. True if cut."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return False
        # Walk back to the last newline; everything after it is the torn line.
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            data = fh.read(pos - start)
            idx = data.rfind(b"\n")
            if idx >= 0:
                fh.truncate(start + idx + 1)
                return True
            pos = start
        fh.truncate(0)
        return True


class FileBusy(RuntimeError):
    """Another process holds the run lock of an output file."""


def lock_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def run_lock(path: str | Path) -> Iterator[Path]:
    """Hold an advisory exclusive lock on ``path`` for one writing run.

    The lock sits on a sidecar ``<name>.lock`` file (``flock``), not on the data file,
    so atomic rewrites of the data file (``--overwrite``) keep it. The kernel drops it
    when the process dies, kill -9 included, so a stale lock file never blocks a rerun.
    Raises :class:`FileBusy` at once when another run holds it.
    """
    lp = lock_path(path)
    lp.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lp, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise FileBusy(f"{path} is being written by another run (pid {holder}, lock {lp})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield Path(path)
    finally:
        os.close(fd)  # closing the descriptor releases the lock
