"""Domain-knowledge text for CPT, as single-turn samples.

Two kinds of input:
- JSONL files of ``{"text", "title"?, "url"?, "domain"?, "id"?}`` records;
- a search corpus folder (``pages.sqlite``, as built by ``agentworld.envs.search``):
  every page is cut into the same passages the search index holds, and each passage
  becomes a sample of the ``search`` domain.
A sample is one turn: the user names the document, the assistant writes it out, so the
passage text is in the loss and the chat template is the target model's own.
"""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentworld.jsonl import LineError, iter_json_lines

Knowledge = tuple[str, dict[str, Any]]
"""(stable key, record with ``text`` and optional ``title``/``url``/``domain``)."""


def hash_text(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def _jsonl(path: Path) -> Iterator[Knowledge | LineError]:
    for lineno, rec in iter_json_lines(path):
        if isinstance(rec, LineError):
            yield rec
        elif not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
            yield LineError(str(path), lineno, "a knowledge record needs a string 'text' field")
        else:
            yield f"knowledge:{rec.get('id') or f'{path.name}:{lineno}'}:{hash_text(rec['text'])}", rec


def _corpus(folder: Path) -> Iterator[Knowledge]:
    from agentworld.envs.search.index import passages

    db = sqlite3.connect(f"file:{folder / 'pages.sqlite'}?mode=ro", uri=True)
    try:
        for url, title, text in db.execute("SELECT url, title, text FROM pages ORDER BY url"):
            for i, chunk in enumerate(passages(text or "")):
                yield f"knowledge:{url}#{i}", {"text": chunk, "title": title, "url": url, "domain": "search"}
    finally:
        db.close()


def read_knowledge(paths: list[str], limit: int = 0) -> Iterator[Knowledge | LineError]:
    """Knowledge records from JSONL files and corpus folders; ``limit`` > 0 caps the total."""

    def every() -> Iterator[Knowledge | LineError]:
        for p in map(Path, paths):
            if (p / "pages.sqlite").exists():
                yield from _corpus(p)
            elif p.is_file():
                yield from _jsonl(p)
            else:
                raise FileNotFoundError(f"knowledge input not found: {p} (a JSONL file or a search corpus folder)")

    return itertools.islice(every(), limit) if limit > 0 else every()


def knowledge_messages(rec: dict[str, Any]) -> list[dict[str, str]]:
    """A passage as one turn: the user names it, the assistant writes it out."""
    title = rec.get("title") or rec.get("url") or rec.get("source") or "Document"
    domain = rec.get("domain")
    prompt = f"[{domain}] {title}" if domain else str(title)
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": rec["text"]}]
