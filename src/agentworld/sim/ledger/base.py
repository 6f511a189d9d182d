"""The state ledger: facts a simulated session has established, and checks against them.

A world model forgets; the ledger does not. After each turn a domain's ledger rules
apply what the accepted action did (read by the domain's extractor,
``agentworld.domains.<domain>.effects``) and record what became true (a file and its content,
a deleted path, the working directory, an environment variable, a created id, a row, a
memory entry). The ledger is rendered into the next prompt, and each new prediction is
checked against it before it is accepted.
"""

from __future__ import annotations

import abc
import json
import posixpath
from typing import Any

from pydantic import BaseModel, Field

# Ledgers read calls leniently (alias keys, string arguments, the published presentation
# of a user turn); re-exported under the name the domain rules use.
from agentworld.domains.presented import tool_call as parse_tool_call  # noqa: F401


class Conflict(BaseModel):
    """A prediction that contradicts what the session established."""

    kind: str
    """``file_content``, ``missing_file``, ``deleted_path``, ``cwd``, ``env_var``, ``deleted_id``,
    ``memory``, ``page``..."""
    key: str
    expected: str
    detail: str = ""


class LedgerState(BaseModel):
    """Everything established so far; plain data, so snapshots are deep copies."""

    cwd: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    """Path -> content the session wrote (absolute paths)."""
    dirs: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    ids: dict[str, str] = Field(default_factory=dict)
    """Created id -> what created it (``tool_name``)."""
    deleted_ids: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    """Records created through tools: ``{"tool":..., "arguments":..., "id":...}``."""
    memory: dict[str, str] = Field(default_factory=dict)
    pages: dict[str, str] = Field(default_factory=dict)
    """URL -> the first extraction of its text, so later extractions agree."""
    windows: list[str] = Field(default_factory=list)
    """Titles of the open desktop windows (GUI domains), in the order the screen lists them."""
    active_window: str | None = None
    visited: list[str] = Field(default_factory=list)
    """Web: URLs the browser showed, in the order first seen (the last one is the current page)."""
    form_values: dict[str, str] = Field(default_factory=dict)
    """Web: element id -> the value the session put in that field of the current page."""

    # -- helpers the domain rules share ---------------------------------------------
    def abspath(self, path: str) -> str:
        if not path.startswith("/") and not path.startswith("~"):
            path = posixpath.join(self.cwd or "/", path)
        return posixpath.normpath(path)

    def write(self, path: str, content: str, *, append: bool = False) -> None:
        path = self.abspath(path)
        self.files[path] = (self.files.get(path, "") if append else "") + content
        if path in self.deleted:
            self.deleted.remove(path)

    def delete(self, path: str) -> None:
        path = self.abspath(path)
        for known in [p for p in self.files if p == path or p.startswith(path.rstrip("/") + "/")]:
            del self.files[known]
        self.dirs = [d for d in self.dirs if not (d == path or d.startswith(path.rstrip("/") + "/"))]
        if path not in self.deleted:
            self.deleted.append(path)

    def forget(self, path: str) -> None:
        """Drop what is known about ``path`` and everything below it (its content changed in
        a way not read exactly): no stale fact is kept to be held against the truth."""
        path = self.abspath(path)

        def under(p: str) -> bool:
            return p == path or p.startswith(path.rstrip("/") + "/")

        self.files = {p: c for p, c in self.files.items() if not under(p)}
        self.deleted = [p for p in self.deleted if not under(p)]

    def is_empty(self) -> bool:
        return not any(getattr(self, f) for f in type(self).model_fields)

    def render(self, *, max_chars: int = 4000) -> str:
        """The ledger as prompt text: short lines the model can check itself against."""
        lines: list[str] = []
        if self.cwd:
            lines.append(f"current directory: {self.cwd}")
        for k, v in self.env.items():
            lines.append(f"environment variable {k}={v}")
        for path, content in self.files.items():
            shown = content if len(content) <= 400 else content[:400] + f"... ({len(content)} chars)"
            lines.append(f"file {path} contains: {json.dumps(shown, ensure_ascii=False)}")
        for d in self.dirs:
            lines.append(f"directory {d} exists")
        for p in self.deleted:
            lines.append(f"{p} was deleted and no longer exists")
        for i, tool in self.ids.items():
            lines.append(f"id {i} was created by {tool}")
        for i in self.deleted_ids:
            lines.append(f"id {i} was deleted")
        for row in self.rows:
            if "table" in row:  # a database row (tool-created records are listed by id)
                lines.append(f"table {row['table']} holds the row {_row_text(row['values'])}")
        for k, v in self.memory.items():
            lines.append(f"memory[{k}] = {v}")
        for url in self.pages:
            lines.append(f"page {url} was already extracted (extract it identically)")
        for title in self.windows:
            lines.append(f"window {title!r} is open" + (" and active" if title == self.active_window else ""))
        if self.visited:
            lines.append("pages visited: " + ", ".join(self.visited[-10:]) + f" (the browser is on {self.visited[-1]})")
        for bid, value in self.form_values.items():
            lines.append(f"field [{bid}] on the current page holds {json.dumps(value, ensure_ascii=False)}")
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 20] + "\n... (older facts cut)"


def _row_text(values: dict[str, Any]) -> str:
    """A row as the prompt shows it: ``{"col": value}``, or ``(v0, v1)`` when the columns
    are known by position only (an INSERT without a column list)."""
    if values and all(k.startswith("#") for k in values):
        return "(" + ", ".join("NULL" if v is None else json.dumps(v, ensure_ascii=False) for v in values.values()) + ")"
    return json.dumps(values, ensure_ascii=False)


class LedgerRules(abc.ABC):
    """How one domain's actions and observations change and test the ledger."""

    @abc.abstractmethod
    def update(self, state: LedgerState, action: str, observation: str) -> None:
        """Record what the accepted (action, observation) pair established."""

    @abc.abstractmethod
    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        """Conflicts between a candidate observation and the ledger (before ``update``)."""


class NoLedger(LedgerRules):
    """Domains without extraction rules yet (GUI domains): nothing recorded, nothing flagged."""

    def update(self, state: LedgerState, action: str, observation: str) -> None:
        return None

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        return []
