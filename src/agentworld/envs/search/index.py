"""The offline search engine: pages in SQLite, passages in a tantivy index.

A corpus folder holds ``pages.sqlite`` (url -> title, date, source, full text, for the
page extractor), ``index/`` (one tantivy document per passage of about
:data:`PASSAGE_WORDS` words), ``corpus.json`` (how it was built, with counts) and
``files.txt`` (every packaged file a page was read from). A
search ranks passages with BM25 (titles boosted), keeps the best passage per page and
shows a snippet of it centred on the query terms.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import platformdirs
import tantivy

from agentworld.envs.search.sources import SOURCES, Page

PASSAGE_WORDS = 120
SNIPPET_CHARS = 240


@dataclass
class CorpusConfig:
    """How to build a corpus; ``max_pages`` caps each source (None: everything installed)."""

    sources: list[str] = field(default_factory=lambda: list(SOURCES))
    max_pages: int | None = None
    writer_threads: int = 1
    """tantivy indexing threads (the build is usually I/O and parsing bound)."""


def default_corpus_dir(name: str = "full") -> Path:
    return Path(platformdirs.user_cache_dir("agentworld")) / "search" / name


def passages(text: str, words: int = PASSAGE_WORDS) -> Iterator[str]:
    """Paragraph-aligned chunks of about ``words`` words (long paragraphs are split)."""
    buf: list[str] = []
    count = 0
    for para in text.split("\n\n"):
        toks = para.split()
        while len(toks) > words:  # a very long paragraph alone fills several passages
            if buf:
                yield "\n\n".join(buf)
                buf, count = [], 0
            yield " ".join(toks[:words])
            toks = toks[words:]
        if count + len(toks) > words and buf:
            yield "\n\n".join(buf)
            buf, count = [], 0
        if toks:
            buf.append(" ".join(toks))
            count += len(toks)
    if buf:
        yield "\n\n".join(buf)


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("url", stored=True, tokenizer_name="raw")
    sb.add_text_field("title", stored=True, tokenizer_name="en_stem")
    sb.add_text_field("body", stored=True, tokenizer_name="en_stem")
    return sb.build()


def build_corpus(out: str | Path, config: CorpusConfig | None = None,
                 on_page: Callable[[str, int], None] | None = None) -> dict:
    """Build (or rebuild) the corpus in ``out``; returns the manifest written to corpus.json."""
    config = config or CorpusConfig()
    out = Path(out)
    tmp = out.with_name(out.name + ".building")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "index").mkdir(parents=True)
    t0 = time.monotonic()
    db = sqlite3.connect(tmp / "pages.sqlite")
    db.execute("CREATE TABLE pages (url TEXT PRIMARY KEY, title TEXT, date TEXT, source TEXT, text TEXT)")
    index = tantivy.Index(_schema(), path=str(tmp / "index"))
    writer = index.writer(heap_size=64_000_000 * max(1, config.writer_threads), num_threads=config.writer_threads)
    counts: dict[str, dict[str, int]] = {}
    files: set[str] = set()
    for source in config.sources:
        if source not in SOURCES:
            raise KeyError(f"unknown corpus source {source!r} (known: {', '.join(SOURCES)})")
        n_pages = n_passages = 0
        for page in itertools.islice(SOURCES[source](), config.max_pages):
            if db.execute("SELECT 1 FROM pages WHERE url = ?", (page.url,)).fetchone():
                continue
            db.execute("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", (page.url, page.title, page.date, page.source, page.text))
            for chunk in passages(page.text):
                writer.add_document(tantivy.Document(url=page.url, title=page.title, body=chunk))
                n_passages += 1
            n_pages += 1
            files.add(page.file)
            if on_page:
                on_page(source, n_pages)
        counts[source] = {"pages": n_pages, "passages": n_passages}
    writer.commit()
    writer.wait_merging_threads()
    db.commit()
    db.close()
    manifest = {"config": asdict(config), "counts": counts,
                "pages": sum(c["pages"] for c in counts.values()),
                "passages": sum(c["passages"] for c in counts.values()),
                "build_s": round(time.monotonic() - t0, 1)}
    (tmp / "corpus.json").write_text(json.dumps(manifest, indent=1))
    # What the corpus was read from, so a build can be audited against its packages.
    (tmp / "files.txt").write_text("".join(f"{f}\n" for f in sorted(files)))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return manifest


def corpus_ready(path: str | Path) -> bool:
    return (Path(path) / "corpus.json").exists()


@dataclass(frozen=True)
class Hit:
    url: str
    title: str
    date: str
    snippet: str
    score: float


_WORD = re.compile(r"\w+")


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of ``text`` around the first query term it contains, on word boundaries."""
    flat = " ".join(text.split())
    terms = [t.lower() for t in _WORD.findall(query) if len(t) > 2]
    low = flat.lower()
    pos = min((p for t in terms if (p := low.find(t)) >= 0), default=0)
    start = max(0, pos - width // 3)
    if start:
        start = flat.find(" ", start) + 1 or start
    end = start + width
    if end < len(flat):
        end = flat.rfind(" ", start, end) if flat.rfind(" ", start, end) > start else end
    piece = flat[start:end].strip()
    return ("..." if start else "") + piece + ("..." if end < len(flat) else "")


class SearchEngine:
    """Read-only access to a built corpus."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not corpus_ready(self.path):
            raise FileNotFoundError(f"no search corpus at {self.path} (build it with `agentworld collect search --build`)")
        self.manifest = json.loads((self.path / "corpus.json").read_text())
        self.index = tantivy.Index.open(str(self.path / "index"))
        self._searcher = self.index.searcher()
        self._db_path = self.path / "pages.sqlite"

    def __reduce__(self) -> tuple[type[SearchEngine], tuple[Path]]:
        # Pickled as its path (a Ray task reopens the corpus on its own node).
        return SearchEngine, (self.path,)

    def _db(self) -> sqlite3.Connection:
        # One short-lived read-only connection per call: engines are shared across threads.
        return sqlite3.connect(f"file:{self._db_path}?mode=ro", uri=True)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        query = " ".join(query.split())
        if not query:
            return []
        # Query syntax characters in user text are searched as words, not operators.
        safe = re.sub(r'[+\-:^()\[\]{}"~*!\\/<>=]', " ", query)
        parsed, _ = self.index.parse_query_lenient(safe, ["title", "body"], field_boosts={"title": 2.0})
        found = self._searcher.search(parsed, limit=max(40, 8 * k))
        best: dict[str, Hit] = {}
        with self._db() as db:
            for score, addr in found.hits:
                doc = self._searcher.doc(addr)
                url = doc["url"][0]
                if url in best:
                    continue
                row = db.execute("SELECT date FROM pages WHERE url = ?", (url,)).fetchone()
                best[url] = Hit(url, doc["title"][0], row[0] if row else "", snippet(doc["body"][0], query), float(score))
                if len(best) >= k:
                    break
        return list(best.values())

    def page(self, url: str) -> Page | None:
        with self._db() as db:
            row = db.execute("SELECT url, title, date, source, text FROM pages WHERE url = ?", (url,)).fetchone()
        return Page(*row) if row else None

    def sample_pages(self, source: str, n: int, offsets: Iterable[int]) -> list[Page]:
        """Pages of ``source`` at the given positions (modulo its size), in build order."""
        with self._db() as db:
            total = db.execute("SELECT COUNT(*) FROM pages WHERE source = ?", (source,)).fetchone()[0]
            if total == 0:
                return []
            out = []
            for off in itertools.islice(offsets, n):
                row = db.execute("SELECT url, title, date, source, text FROM pages WHERE source = ? "
                                 "ORDER BY rowid LIMIT 1 OFFSET ?", (source, off % total)).fetchone()
                out.append(Page(*row))
        return out

    def sources(self) -> list[str]:
        return [s for s, c in self.manifest["counts"].items() if c["pages"] > 0]
