"""The ledger replayed over real recorded sessions: after every turn what it holds agrees
with what the real machine showed next.

The recordings (``benchmarks/local/trajectories``) start from files the task set up; the
ledger is seeded with those (as if the session had written them), so every later edit
(``sed -i``, ``mv``, ``cp``, ``rm``, appends, truncation, ``tee``, ``git stash``, a script
run) is tested against the real ``cat`` that followed it: either the ledger computed the
new content exactly, or it dropped the fact. A stale fact shows up as a conflict raised
against the real observation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentworld.domains.terminal import typed_text
from agentworld.domains.terminal.screen import PROMPT_LINE, PROMPT_START
from agentworld.sim.ledger import LedgerState, ledger_for

RECORDED = Path(__file__).resolve().parents[1] / "benchmarks" / "local" / "trajectories" / "terminal.jsonl"
_LISTED = re.compile(r"^  (?P<name>\S+) \((?P<size>\d+) bytes", re.M)
_SHOWN = re.compile(r"^--- (?P<name>\S+) ---\n", re.M)


def _recordings() -> list[dict]:
    return [json.loads(line) for line in RECORDED.read_text().splitlines() if line.strip()]


def _initial_files(initial_state: str) -> dict[str, str]:
    """``name -> content`` of the files the recording's set-up shows in full (the stated
    size says whether the shown text is all of it)."""
    sizes = {m["name"]: int(m["size"]) for m in _LISTED.finditer(initial_state)}
    shown = list(_SHOWN.finditer(initial_state))
    out = {}
    for k, m in enumerate(shown):
        end = shown[k + 1].start() - 1 if k + 1 < len(shown) else len(initial_state)
        text = initial_state[m.end():end]
        for content in (text, text + "\n"):
            if len(content.encode()) == sizes.get(m["name"]):
                out[m["name"]] = content
    return out


def _cat_output(observation: str) -> str | None:
    """What a finished lone ``cat`` printed: the lines between the echoed command and the
    final prompt."""
    lines = observation.rstrip("\n").split("\n")
    if len(lines) < 2 or not PROMPT_LINE.match(lines[-1]) or not PROMPT_START.match(lines[0]):
        return None
    return "\n".join(lines[1:-1])


def _replay(rec: dict) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Conflicts the ledger raised against the real observations, and for each lone
    ``cat F`` of a file the ledger knows: ``(typed command, ledger's content, real output)``
    (the command marked ``after sed`` when a ``sed -i`` on that file came earlier)."""
    rules, state = ledger_for("terminal"), LedgerState(cwd="/workspace")
    for name, content in _initial_files(rec.get("initial_state") or "").items():
        state.write(name, content)
    conflicts, compared, sed_edited = [], [], set()
    for k, turn in enumerate(rec["turns"]):
        action, obs = turn["action"], turn["observation"]
        typed = typed_text(action).strip()
        conflicts += [f"{rec['id']} turn {k} ({typed[:60]!r}): {c.kind} {c.key} {c.detail}"
                      for c in rules.check(state, action, obs)]
        m = re.fullmatch(r"cat (\S+)", typed)
        known = state.files.get(state.abspath(m.group(1))) if m else None
        if known is not None and (shown := _cat_output(obs)) is not None:
            compared.append((typed + (" (after sed)" if m.group(1) in sed_edited else ""),
                             known.rstrip("\n"), shown.rstrip("\n")))
        if typed.startswith("sed -i"):
            sed_edited.update(typed.split()[2:])
        rules.update(state, action, obs)
    return conflicts, compared


@pytest.fixture(scope="module")
def replayed() -> list[tuple[dict, list[str], list[tuple[str, str, str]]]]:
    return [(rec, *_replay(rec)) for rec in _recordings()]


def test_no_fact_is_held_against_a_real_observation(replayed) -> None:
    conflicts = [c for _, found, _ in replayed for c in found]
    assert conflicts == [], "\n".join(conflicts[:20])


def test_every_file_the_ledger_still_knows_is_what_the_real_cat_shows(replayed) -> None:
    wrong = [f"{rec['id']}: {cmd}: ledger {mine!r} != real {real!r}"
             for rec, _, compared in replayed for cmd, mine, real in compared if mine != real]
    assert wrong == [], "\n".join(wrong[:10])


def test_in_place_edits_are_computed_not_just_dropped(replayed) -> None:
    # Sessions that ran `sed -i` and then `cat` the file: the ledger knows the edited text.
    after_sed = [rec for rec, _, compared in replayed
                 if any(cmd.endswith("(after sed)") and mine == real for cmd, mine, real in compared)]
    assert {"sed-replace"} <= {rec["provenance"]["task"] for rec in after_sed}
    assert len(after_sed) >= 4
