"""The terminal task library: enough seeded templates, every family covered, valid actions."""

from __future__ import annotations

from collections import Counter

from agentworld.envs.terminal import TEMPLATES, parse_action

FAMILIES = {"text", "files", "archives", "git", "python", "build", "packages", "permissions", "environment",
            "processes", "errors", "editors", "repl", "session"}


def test_library_size_and_families() -> None:
    assert len(TEMPLATES) >= 40
    cats = Counter(TEMPLATES.get(n).category for n in TEMPLATES.names())
    assert set(cats) == FAMILIES


def test_instances_are_seeded_and_valid() -> None:
    varied = 0
    for name in TEMPLATES.names():
        t = TEMPLATES.get(name)
        a, b, c = t.instance(1), t.instance(1), t.instance(2)
        assert a == b, name  # same seed, same task
        varied += a != c
        assert a.name == name and a.description and len(a.actions) >= 4, name
        for action in a.actions:
            assert parse_action(action), name
        assert all(not p.startswith("/workspace") for p in a.files), name  # relative or elsewhere
    assert varied >= len(TEMPLATES) * 0.7  # most templates change with the seed


def test_sessions_are_long_and_depend_on_earlier_state() -> None:
    for name in TEMPLATES.names():
        t = TEMPLATES.get(name)
        if t.category == "session":
            task = t.instance(0)
            assert len(task.actions) >= 6, name
