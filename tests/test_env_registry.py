"""One check over every registered environment: ids resolve lazily to Env classes."""

import re

import pytest

from agentworld.domains import DOMAINS
from agentworld.envs import Env, make, register, registered
from agentworld.envs.base import _REGISTRY


@pytest.mark.parametrize("env_id", registered())
def test_registered_env_resolves_to_an_env_class(env_id):
    import importlib

    entry = _REGISTRY[env_id]
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        entry = getattr(importlib.import_module(module), attr)
    assert isinstance(entry, type) and issubclass(entry, Env)
    # The simulator's domain comes from its scenario; every other env has one of its own.
    assert entry.domain in DOMAINS or (entry.domain == "" and env_id == "sim-v1")
    assert re.fullmatch(r"[a-z][a-z0-9-]*-v\d+", env_id)


def test_builtin_families_are_known_without_importing_them():
    assert {"terminal-v1", "mcp-v1", "search-v1", "swe-v1", "sim-v1", "fictional-search-v1"} <= set(registered())


def test_unknown_id_names_the_known_ones():
    with pytest.raises(KeyError, match="terminal-v1"):
        make("fax-v0")


def test_register_accepts_entry_points():
    register("test-entry-v1", "agentworld.envs.terminal.env:TerminalEnv")
    try:
        assert "test-entry-v1" in registered()
    finally:
        _REGISTRY.pop("test-entry-v1")
