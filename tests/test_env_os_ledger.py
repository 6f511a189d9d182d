"""The desktop ledger and observation parser on real recordings.

``fixtures/recorded/os-scripted-3.jsonl`` holds three scripted episodes recorded in the
real sandboxed desktop (`agentworld collect os`): append a line and save, a calculator
sum, and an edit closed with "Save" in the unsaved-changes dialog. No session needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld.domains.os import effects, tree_nodes, windows
from agentworld.records.trajectory import Trajectory, read_trajectories
from agentworld.sim.ledger import LedgerState, ledger_for

FIXTURE = Path(__file__).parent / "fixtures" / "recorded" / "os-scripted-3.jsonl"


@pytest.fixture(scope="module")
def recorded() -> dict[str, Trajectory]:
    return {t.provenance.task: t for t in read_trajectories(FIXTURE)}


def _replay(traj: Trajectory) -> LedgerState:
    rules, state = ledger_for("os"), LedgerState()
    for turn in traj.turns:
        assert rules.check(state, turn.action, turn.observation) == [], turn.action
        rules.update(state, turn.action, turn.observation)
    return state


def test_parser_reads_the_real_tree(recorded: dict[str, Trajectory]) -> None:
    obs = recorded["append_line"].turns[-1].observation
    nodes = tree_nodes(obs)
    assert nodes[0].role == "frame" and nodes[0].name.endswith(" - Mousepad") and "active" in nodes[0].states
    text = next(n for n in nodes if n.role == "text" and "editable" in n.states)
    assert "focused" in text.states and text.text and text.text.endswith("\n")
    assert windows(obs) == [(nodes[0].name, True)]
    path = nodes[0].name.removesuffix(" - Mousepad")
    assert [(op.kind, op.target, op.value) for op in effects("", obs).ops] == [("write", path, text.text)]


def test_real_episodes_replay_without_conflicts(recorded: dict[str, Trajectory]) -> None:
    saved = _replay(recorded["append_line"])
    (path, content), = saved.files.items()
    assert saved.active_window == f"{path} - Mousepad" and content.count("\n") >= 2
    calc = _replay(recorded["calc_keyboard"])
    assert calc.files == {} and calc.windows == ["galculator"]
    closed = _replay(recorded["close_and_save"])
    assert closed.windows == [] and closed.active_window is None
    (path, content), = closed.files.items()
    # The file holds what the editor showed before the dialog's "Save" closed it.
    before = recorded["close_and_save"].turns[1].observation
    assert tree_nodes(before)[-1].text == content or content in before.replace("\\n", "\n")
    text = closed.render()
    assert f"file {path} contains" in text


def test_contradictions_are_flagged(recorded: dict[str, Trajectory]) -> None:
    rules = ledger_for("os")
    traj = recorded["append_line"]
    state = _replay(traj)
    last = traj.turns[-1].observation
    (path, content), = state.files.items()
    other = last.replace(repr(content)[1:-1], "something else entirely")
    assert other != last
    # Pressing a cursor key cannot change what the unmodified editor shows.
    found = rules.check(state, "import pyautogui\npyautogui.press('down')", other)
    assert [c.kind for c in found] == ["file_content"] and found[0].key == path
    # Saving can.
    assert rules.check(state, "import pyautogui\npyautogui.hotkey('ctrl', 's')", other) == []
    gone = last.split("Windows:")[0] + "Windows:\n  (none)\nFocused: nothing"
    assert [c.kind for c in rules.check(state, "import pyautogui\npyautogui.write('x')", gone)] == ["window"]
    assert rules.check(state, "import pyautogui\npyautogui.hotkey('ctrl', 'q')", gone) == []
    assert "is open and active" in state.render()
