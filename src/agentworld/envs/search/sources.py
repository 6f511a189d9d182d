"""Offline web pages from text that Debian packages ship.

Four sources, each a deterministic stream of :class:`Page` records with a stable URL
(the address the same document has on the public web):

- ``python``: the Python 3.11 documentation (``python3.11-doc``, Sphinx HTML);
- ``kernel``: the Linux 6.1 documentation (``linux-doc-6.1``, Sphinx HTML);
- ``man``: the manual pages (sections 1-8, English) of the packages in
  :data:`MAN_PACKAGES`, rendered from roff;
- ``gcide``: the GNU Collaborative International Dictionary of English (``dict-gcide``).

Every file read is one that ``dpkg -L`` lists for a package of :data:`APT_PACKAGES`
(``scripts/setup.sh`` installs them): whatever else a host has installed (SDKs with
thousands of man pages, other documentation) never enters the corpus, so two machines
with the same Debian release build the same corpus. Dates are the package's file dates
(or a man page's own date), so they are stable for one package version.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import itertools
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

PYTHON_HTML = Path("/usr/share/doc/python3.11/html")
KERNEL_HTML = Path("/usr/share/doc/linux-doc-6.1/html")
MAN_ROOT = Path("/usr/share/man")
GCIDE = Path("/usr/share/dictd/gcide")
MAN_PACKAGES = ("manpages", "manpages-dev", "coreutils", "findutils", "grep", "sed", "tar", "gzip", "diffutils",
                "bash", "util-linux", "procps", "less", "man-db")
"""Packages whose manual pages form the ``man`` source: the Linux man-pages project
(system calls, library functions, files, overviews) and the core command-line tools."""


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    date: str
    source: str
    text: str
    file: str = ""
    """The packaged file the page was read from (not stored in the corpus's page table)."""


@functools.cache
def package_files(package: str) -> frozenset[str]:
    """The paths ``dpkg -L`` lists for an installed package (empty if it is not installed)."""
    try:
        res = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return frozenset()
    return frozenset(res.stdout.splitlines()) if res.returncode == 0 else frozenset()


def source_files(source: str) -> frozenset[str]:
    """Every file a source may read: its packages' files."""
    return frozenset().union(*(package_files(p) for p in APT_PACKAGES[source]))


def _mdate(path: Path) -> str:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d")


def _clean(text: str) -> str:
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" ?\n ?", "\n", text)
    text = text.replace("¶", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# -- Sphinx HTML ---------------------------------------------------------------------
def _sphinx_pages(root: Path, base_url: str, source: str, title_suffix: re.Pattern[str]) -> Iterator[Page]:
    from lxml import html as lhtml

    prefix = f"{root}/"
    for name in sorted(f for f in source_files(source) if f.startswith(prefix) and f.endswith(".html")):
        path = Path(name)
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("_", "genindex", "search", "py-modindex")) or "/_" in rel:
            continue
        try:
            tree = lhtml.fromstring(path.read_bytes())
        except (ValueError, OSError):
            continue
        main = tree.xpath('//div[@role="main"]') or tree.xpath('//div[@class="body"]')
        if not main:
            continue
        body = main[0]
        for junk in body.xpath('.//a[@class="headerlink"]|.//script|.//style'):
            junk.drop_tree()
        # Block elements end lines, so paragraphs survive text extraction.
        for el in body.iter("p", "pre", "li", "dt", "dd", "h1", "h2", "h3", "h4", "tr", "div"):
            el.tail = "\n\n" + (el.tail or "")
        text = _clean(body.text_content())
        if len(text) < 80:
            continue
        title = title_suffix.sub("", (tree.findtext(".//title") or rel).strip())
        yield Page(f"{base_url}/{rel}", title, _mdate(path), source, text, name)


def python_pages() -> Iterator[Page]:
    return _sphinx_pages(PYTHON_HTML, "https://docs.python.org/3.11", "python",
                         re.compile(r"\s*[—-]\s*Python 3\.11.*$"))


def kernel_pages() -> Iterator[Page]:
    return _sphinx_pages(KERNEL_HTML, "https://www.kernel.org/doc/html/v6.1", "kernel",
                         re.compile(r"\s*[—-]\s*The Linux Kernel.*$"))


# -- man pages -------------------------------------------------------------------------
_ROFF_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""), (re.compile(r"\\\(em|\\\(en"), "-"),
    (re.compile(r"\\\((lq|rq|dq)"), '"'), (re.compile(r"\\\((oq|cq|aq)"), "'"), (re.compile(r"\\\(bu"), "*"),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""), (re.compile(r"\\[-]"), "-"), (re.compile(r"\\[&:%|^]"), ""),
    (re.compile(r"\\[{}]"), ""), (re.compile(r"\\e"), "\\\\"), (re.compile(r"\\ "), " "), (re.compile(r"\\s[-+]?\d"), ""),
    (re.compile(r'\\".*$'), ""),
]


def _roff_inline(line: str) -> str:
    for pat, rep in _ROFF_ESCAPES:
        line = pat.sub(rep, line)
    return line


def roff_to_text(source: str) -> tuple[str, str, str | None]:
    """(name, text, date) from a man page's roff source: sections become headings."""
    out: list[str] = []
    name, date = "", None
    for raw in source.splitlines():
        if raw.startswith((".", "'")):
            parts = raw[1:].split(None, 1)
            if not parts:
                continue
            macro, arg = parts[0], (parts[1] if len(parts) > 1 else "")
            arg = _roff_inline(arg).replace('"', "").strip()
            if macro == "TH":
                fields = re.findall(r'"[^"]*"|\S+', raw[3:])
                fields = [f.strip('"') for f in fields]
                name = fields[0] if fields else ""
                date = fields[2] if len(fields) > 2 else None
            elif macro in ("SH", "SS"):
                out.append(f"\n\n{arg.upper() if macro == 'SH' else arg}\n")
            elif macro in ("PP", "LP", "P", "TP", "IP", "sp", "br"):
                out.append("\n" + (arg + " " if macro == "IP" and arg else ""))
            elif macro in ("B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB"):
                out.append(arg + " ")
            continue
        out.append(_roff_inline(raw) + " ")
    return name, _clean("".join(out)), date


_MAN_FILE = re.compile(re.escape(str(MAN_ROOT)) + r"/man[1-8]/[^/]+\.gz")


def man_pages() -> Iterator[Page]:
    # English pages only: translations live under /usr/share/man/<lang>/, which the pattern skips.
    for name in sorted(f for f in source_files("man") if _MAN_FILE.fullmatch(f)):
        path = Path(name)
        if not path.is_file():
            continue
        try:
            data = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        except (OSError, EOFError):
            continue
        if data.lstrip().startswith(".so "):
            continue  # an alias of another page
        stem = path.name[:-3]
        page, _, section = stem.rpartition(".")
        _, text, date = roff_to_text(data)
        if len(text) < 80:
            continue
        try:
            day = dt.datetime.strptime(date or "", "%Y-%m-%d").strftime("%Y-%m-%d")
        except ValueError:
            day = _mdate(path)
        url = f"https://manpages.debian.org/bookworm/{quote(page)}.{section}.en.html"
        yield Page(url, f"{page}({section}) - Linux manual page", day, "man", text, name)


# -- GCIDE dictionary -----------------------------------------------------------------------
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64_int(s: str) -> int:
    n = 0
    for ch in s:
        n = n * 64 + _B64.index(ch)
    return n


def _heads(entry: str, word: str) -> bool:
    """True when ``entry`` is headed by ``word`` (its text starts with the word)."""
    head = re.split(r"[\\\n,]", entry, maxsplit=1)[0].strip().lower()
    return head == word.lower() or head.replace('"', "").replace("*", "") == word.lower()


def gcide_pages() -> Iterator[Page]:
    index, data_path = GCIDE.with_suffix(".index"), GCIDE.with_suffix(".dict.dz")
    if not {str(index), str(data_path)} <= source_files("gcide"):
        return
    data = gzip.decompress(data_path.read_bytes())  # dictzip is gzip-compatible
    day = _mdate(data_path)
    # The index is sorted by headword; a word may have several entries (one per sense
    # group or source dictionary), and inflections and run-in phrases ("Spun yarn") point
    # into the entry of their main word. A page holds the entries a headword heads.
    seen: set[tuple[int, int]] = set()
    rows = (line.split("\t") for line in index.read_text(encoding="utf-8", errors="replace").splitlines())
    rows = (r for r in rows if len(r) == 3 and not r[0].startswith("00-database"))
    for _, group in itertools.groupby(rows, key=lambda r: r[0].lower()):
        entries = []
        word = ""
        for headword, off64, size64 in group:
            word = word or headword
            key = (_b64_int(off64), _b64_int(size64))
            text = _clean(data[key[0]:key[0] + key[1]].decode("utf-8", "replace"))
            if key not in seen and _heads(text, headword):
                seen.add(key)
                entries.append(text)
        text = "\n\n".join(e for e in entries if e)
        if len(text) < 20:
            continue
        url = f"https://www.dict.org/bin/Dict?Form=Dict2&Database=gcide&Query={quote(word)}"
        yield Page(url, f"{word} - definition from GCIDE", day, "gcide", text, str(data_path))


SOURCES: dict[str, Callable[[], Iterator[Page]]] = {
    "python": python_pages,
    "kernel": kernel_pages,
    "man": man_pages,
    "gcide": gcide_pages,
}
APT_PACKAGES: dict[str, tuple[str, ...]] = {"python": ("python3.11-doc",), "kernel": ("linux-doc-6.1",),
                                            "man": MAN_PACKAGES, "gcide": ("dict-gcide",)}
"""The Debian packages each source reads (and ``scripts/setup.sh`` installs)."""


def available_sources() -> dict[str, bool]:
    """Whether every package of each source is installed."""
    return {s: all(package_files(p) for p in pkgs) for s, pkgs in APT_PACKAGES.items()}
