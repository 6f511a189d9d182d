"""The OpenMP wait policy follows the load at start-up, and a user's own setting wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentworld.openmp import choose_wait_policy


def test_policy_follows_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert choose_wait_policy(load=0.3, cores=2) == "ACTIVE" and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert choose_wait_policy(load=1.0, cores=2) == "PASSIVE"
    assert choose_wait_policy(load=0.0, cores=2) == "PASSIVE"  # set now: the process keeps it
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert choose_wait_policy(load=9.0, cores=2) == "ACTIVE"  # the user's setting wins


def test_the_cli_sets_it_before_torch_loads() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = ("import sys; sys.argv = ['agentworld', '--help']\nfrom agentworld.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nimport os; print('POLICY', os.environ['OMP_WAIT_POLICY'])")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "POLICY ACTIVE" in res.stdout or "POLICY PASSIVE" in res.stdout, res.stderr[-500:]
    res = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "PASSIVE"},
                         capture_output=True, text=True, timeout=120)
    assert "POLICY PASSIVE" in res.stdout
