"""Goal checks of terminal tasks: one predicate, decided by the real sandbox or the ledger.

A :class:`FileCheck` reads one path. In the real environment the read is a command run in
the episode's sandbox (``cat``/``test -d``); in the simulator the same predicate reads the
ledger (seeded with the task's starting files, then updated by every accepted step) as
long as no action touched the path in a way the ledger could not follow. A
:class:`CommandCheck` runs a probe command; the ledger never knows its output. What the
ledger cannot decide goes to the judge: an LLM judge when one is given, else the rule
judge, which looks for the agent's own evidence on the screens (a ``cat`` of the path
after its last change, the probe's output).
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass
from typing import Literal

from agentworld.agents.tasks.base import CheckResult, Decider, JudgeFn
from agentworld.domains.terminal import effects, typed_text
from agentworld.domains.terminal.effects import NO_SUCH
from agentworld.records.trajectory import Trajectory
from agentworld.sim.ledger import LedgerState

FileKind = Literal["equals", "contains", "lacks", "exists", "absent", "dir", "executable"]
_READERS = ("cat ", "head ", "tail ", "nl ", "less ", "more ")


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


@dataclass(frozen=True)
class FileCheck:
    path: str
    """Absolute path inside the sandbox."""
    kind: FileKind
    text: str = ""
    weight: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.kind} {self.path}" + (f" {self.text!r}" if self.text else "")

    def describe(self) -> str:
        words = {"equals": f"contains exactly {self.text!r}", "contains": f"contains {self.text!r}",
                 "lacks": f"does not contain {self.text!r}", "exists": "exists", "absent": "does not exist",
                 "dir": "is a directory", "executable": "is an executable file"}
        return f"{self.path} {words[self.kind]}"

    def holds(self, content: str | None, *, is_dir: bool = False, executable: bool = False) -> bool:
        """The predicate on the path's content (None: the path does not exist)."""
        if self.kind == "absent":
            return content is None and not is_dir
        if self.kind == "dir":
            return is_dir
        if self.kind == "executable":
            return content is not None and executable
        if content is None:
            return False
        if self.kind == "equals":
            return _norm(content) == _norm(self.text)
        if self.kind == "contains":
            return self.text in content
        if self.kind == "lacks":
            return self.text not in content
        return True  # exists

    def shell(self) -> str:
        """The command the real check runs: kind line, then the content."""
        p = shlex.quote(self.path)
        return (f"if [ -d {p} ]; then echo dir; elif [ -f {p} ]; then "
                f"if [ -x {p} ]; then echo exe; else echo file; fi; cat -- {p}; else echo none; fi")

    def on_output(self, out: str) -> bool:
        head, _, body = out.partition("\n")
        if head == "dir":
            return self.holds(None, is_dir=True)
        if head in ("file", "exe"):
            return self.holds(body, executable=head == "exe")
        return self.holds(None)


@dataclass(frozen=True)
class CommandCheck:
    probe: str
    """A shell command run in /workspace; the check passes when its output (stripped) equals ``expect``."""
    expect: str
    what: str
    weight: float = 1.0

    @property
    def name(self) -> str:
        return self.what

    def describe(self) -> str:
        return f"{self.what} (`{self.probe}` prints {self.expect!r})"


Check = FileCheck | CommandCheck


def _typed(traj: Trajectory) -> list[str]:
    out = []
    for t in traj.turns:
        try:
            out.append(typed_text(t.action))
        except Exception:  # noqa: BLE001 - an unparseable action typed nothing
            out.append("")
    return out


_READ_ONLY = ("cat", "head", "tail", "nl", "less", "more", "grep", "wc", "ls", "stat", "file", "diff", "cmp", "jq",
              "chmod", "chown")
"""Commands that leave a file's content as it was (modes are never the ledger's to decide)."""


def _covers(target: str, path: str) -> bool:
    """Whether an ``unknown`` effect on ``target`` (relative to a working directory this
    reading does not replay) may reach ``path``: ``.`` (a script run, a glob) reaches all."""
    t = posixpath.normpath(target)
    if t == ".":
        return True
    if t.startswith("/"):
        return path == t or path.startswith(t.rstrip("/") + "/")
    return path.endswith("/" + t) or f"/{t}/" in path


def _unfollowed(path: str, traj: Trajectory, typed: list[str]) -> bool:
    """Whether an accepted action touched ``path`` without the ledger knowing what it did to it
    (``sort > f``, a script run, ``chmod``...): then the ledger's view of the path may be stale.
    An ``unknown`` effect makes the ledger forget the path, which is not the path being absent."""
    name = posixpath.basename(path)
    for line, turn in zip(typed, traj.turns, strict=True):
        found = effects(turn.action, turn.observation)
        if found.failed:
            continue  # the screen says it failed: nothing happened, as the ledger has it
        if any(op.kind == "unknown" and _covers(op.target, path) for op in found.ops):
            return True
        if name not in line:
            continue
        if any(name in (posixpath.basename(op.target), posixpath.basename(op.source)) for op in found.ops
               if op.kind not in ("read", "unknown")):
            continue
        words = line.split()
        if words and words[0] in _READ_ONLY and ">" not in line:
            continue
        return True
    return False


def ledger_decides(check: FileCheck, ledger: LedgerState, traj: Trajectory, typed: list[str]) -> bool | None:
    """The check on the ledger, or None when the ledger cannot tell: an action touched the
    path in a way it did not follow (it knows only writes whose content is certain), or the
    check is on file modes, which it does not track."""
    path = posixpath.normpath(check.path)
    if _unfollowed(path, traj, typed):
        return None
    if path in ledger.files:
        return None if check.kind == "executable" else check.holds(ledger.files[path])
    if path in ledger.dirs:
        return check.holds(None, is_dir=True)
    if path not in ledger.deleted and _written(posixpath.basename(path), traj):
        return None  # written, yet the ledger holds no fact: it dropped what it could not apply (sed, cp)
    return check.holds(None)  # deleted, or never created


_WRITES = ("write", "copy", "move", "sed", "touch", "mkdir")


def _written(name: str, traj: Trajectory) -> bool:
    """Whether an accepted action wrote a path named ``name``."""
    for turn in traj.turns:
        found = effects(turn.action, turn.observation)
        if not found.failed and any(op.kind in _WRITES and posixpath.basename(op.target) == name for op in found.ops):
            return True
    return False


def rule_judge(check: Check, traj: Trajectory, typed: list[str]) -> bool:
    """Evidence on the screens: the probe's output, or a read of the path after its last change."""
    if isinstance(check, CommandCheck):
        for line, turn in zip(reversed(typed), reversed(traj.turns), strict=True):
            if check.probe in line:
                shown = turn.observation.split("\n", 1)[1] if "\n" in turn.observation else ""
                return check.expect in shown
        return False
    name = posixpath.basename(check.path)
    for line, turn in zip(reversed(typed), reversed(traj.turns), strict=True):
        if name not in line:
            continue
        if not line.lstrip().startswith(_READERS) or ">" in line:
            return False  # changed after the last look (a redirect writes): no evidence of the end state
        shown = turn.observation.split("\n", 1)[1] if "\n" in turn.observation else ""
        missing = bool(NO_SUCH.search(shown))
        if check.kind in ("absent",):
            return missing
        if missing:
            return False
        if check.kind == "equals":
            return all(ln.strip() in shown for ln in check.text.splitlines() if ln.strip())
        return check.holds(shown)
    return False


def judge_check(check: Check, traj: Trajectory, typed: list[str], judge: JudgeFn | None) -> CheckResult:
    decider: Decider = "rule_judge"
    verdict = None
    if judge is not None:
        verdict = judge(check.describe(), traj)
        decider = "llm_judge"
    if verdict is None:
        verdict, decider = rule_judge(check, traj, typed), "rule_judge"
    return CheckResult(check.name, bool(verdict), decider, check.weight)
