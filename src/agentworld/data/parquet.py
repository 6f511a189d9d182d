"""Built datasets on disk: Hugging Face ``datasets`` Parquet shards and/or JSONL.

A dataset named ``train`` in a folder is ``train.parquet`` (one shard) or
``train-00000-of-00003.parquet``... (shards of about :data:`SHARD_BYTES` of Arrow data
each), and/or ``train.jsonl`` (one JSON object per row). Either opens with
``datasets.load_dataset("parquet" | "json", data_files=...)``; :func:`open_dataset`
does that, streaming (``IterableDataset``) on request, and prefers Parquet when both
are there. Writing a dataset removes the files of the same name that this write did
not produce (other shard counts, the other format), so a folder never mixes builds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from agentworld.jsonl import write_jsonl

Format = Literal["parquet", "jsonl", "both"]
FORMATS: tuple[str, ...] = ("parquet", "jsonl", "both")

SHARD_BYTES = 500 * 2**20
"""Arrow bytes per Parquet shard (what ``datasets`` uses for Hub uploads)."""


def _shard_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(name)}(-\d{{5}}-of-\d{{5}})?\.parquet")


def parquet_files(folder: str | Path, name: str = "train") -> list[Path]:
    """The Parquet shards of dataset ``name`` in ``folder``, in shard order."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    pattern = _shard_re(name)
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name))


def dataset_files(folder: str | Path, name: str = "train") -> tuple[str, list[Path]]:
    """(``"parquet"`` or ``"json"``, the files) of dataset ``name``; Parquet first, and
    no files when there is neither."""
    shards = parquet_files(folder, name)
    if shards:
        return "parquet", shards
    jsonl = Path(folder) / f"{name}.jsonl"
    return ("json", [jsonl]) if jsonl.exists() else ("parquet", [])


def write_dataset(
    folder: str | Path,
    rows: Sequence[dict[str, Any]],
    fmt: str = "parquet",
    *,
    name: str = "train",
    shard_bytes: int = SHARD_BYTES,
) -> list[Path]:
    """Write ``rows`` as dataset ``name`` in ``folder`` in format ``fmt`` (parquet, jsonl
    or both); returns the files written, Parquet shards first."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown dataset format {fmt!r}: choose {', '.join(FORMATS)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if fmt in ("parquet", "both"):
        written += _write_parquet(folder, name, rows, shard_bytes)
    if fmt in ("jsonl", "both"):
        path = folder / f"{name}.jsonl"
        write_jsonl(path, rows)
        written.append(path)
    stale = [*parquet_files(folder, name), folder / f"{name}.jsonl"]
    for path in stale:
        if path not in written:
            path.unlink(missing_ok=True)
    return written


def _write_parquet(folder: Path, name: str, rows: Sequence[dict[str, Any]], shard_bytes: int) -> list[Path]:
    import datasets

    # Our own progress bars cover the run; datasets' per-call bars would interleave.
    was_on = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        ds = datasets.Dataset.from_list(list(rows))
        n = max(1, math.ceil(ds.data.nbytes / shard_bytes)) if len(ds) else 1
        n = min(n, max(len(ds), 1))
        paths = [folder / f"{name}.parquet"] if n == 1 else [
            folder / f"{name}-{i:05d}-of-{n:05d}.parquet" for i in range(n)
        ]
        for i, path in enumerate(paths):
            tmp = path.with_suffix(".parquet.tmp")
            (ds.shard(n, i, contiguous=True) if n > 1 else ds).to_parquet(str(tmp))
            tmp.replace(path)
    finally:
        if was_on:
            datasets.enable_progress_bars()
    return paths


def open_dataset(folder: str | Path, *, name: str = "train", streaming: bool = False) -> Any:
    """Dataset ``name`` of ``folder`` via ``datasets.load_dataset``: a ``Dataset``
    (memory-mapped Arrow), or an ``IterableDataset`` that reads rows as they are used."""
    import datasets

    kind, files = dataset_files(folder, name)
    if not files:
        raise FileNotFoundError(f"no dataset {name!r} in {folder} ({name}.parquet, shards or {name}.jsonl)")
    return datasets.load_dataset(kind, data_files=[str(f) for f in files], split="train", streaming=streaming)


def column_names(folder: str | Path, name: str = "train") -> list[str]:
    """Columns of dataset ``name``, from the Parquet schema or the first JSONL row."""
    kind, files = dataset_files(folder, name)
    if not files:
        return []
    if kind == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(files[0]).names)
    first = next(_json_rows(files[0]), None)
    return list(first) if first else []


def num_rows(folder: str | Path, name: str = "train") -> int:
    """Rows of dataset ``name``, from the Parquet footers (no data read) or by counting lines."""
    kind, files = dataset_files(folder, name)
    if kind == "parquet":
        import pyarrow.parquet as pq

        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return sum(1 for _ in _json_rows(files[0])) if files else 0


def _json_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def jsonl_to_parquet(path: str | Path) -> Path:
    """A Parquet copy (``<stem>.parquet``) beside the JSONL file ``path``."""
    path = Path(path)
    rows = list(_json_rows(path))
    [out] = _write_parquet(path.parent, path.stem, rows, shard_bytes=2**62)
    return out
