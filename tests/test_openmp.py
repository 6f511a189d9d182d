"""The OpenMP wait policy is set before torch loads, and a user's own setting wins."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentworld.openmp import choose_wait_policy


def test_passive_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert choose_wait_policy() == "PASSIVE" and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert choose_wait_policy() == "ACTIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "")
    assert choose_wait_policy() == "PASSIVE"


def test_the_cli_sets_it_before_torch_loads() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = ("import sys; sys.argv = ['agentworld', '--help']\nfrom agentworld.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "import os; print('POLICY', os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "POLICY PASSIVE" in res.stdout, res.stderr[-500:]
    res = subprocess.run([sys.executable, "-c", code], env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                         capture_output=True, text=True, timeout=120)
    assert "POLICY ACTIVE" in res.stdout
