"""The SWE sandbox runs on the episode's declared clock: `date` and pytest's durations repeat exactly."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from agentworld.envs.clock import REAL, SHARED_COUNTER_FILES
from agentworld.envs.swe import REPOS, SweEnv, tool_call

pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(600)]

_PROBE = "date -u +%Y-%m-%dT%H:%M:%SZ; python3 -c 'import time; a = time.monotonic(); print(time.monotonic() > a)'"
_SUMMARY = re.compile(r"^=*\s*(\d+ failed.* in \d+\.\d\ds)\b", re.M)


def _episode(options: dict) -> tuple[str, list[str]]:
    env = SweEnv()
    try:
        env.reset(seed=3, options={"repo": "inflection", **options})
        obs = [env.step(tool_call("bash", command=c)).observation
               for c in (_PROBE, f"cd /workspace/inflection && {REPOS['inflection'].test_command}",
                         f"ls {' '.join(SHARED_COUNTER_FILES)}")]
        return env.context().initial_state or "", obs
    finally:
        env.close()


@pytest.mark.slow
def test_date_and_pytest_durations_are_the_declared_clocks_in_every_run() -> None:
    state, first = _episode({})
    _, again = _episode({})
    assert first == again
    assert "clock (durations included) starts at 2026-01-15T09:30:00Z" in state
    assert first[0].startswith("2026-01-15T09:30:00Z\nTrue\n")  # the clock advances, deterministically
    summary = _SUMMARY.search(first[1])
    assert summary, first[1]
    # Ticks, not seconds: a suite that takes seconds here reads a small, fixed duration.
    assert float(summary.group(1).rsplit(" in ", 1)[1][:-1]) < 1.0
    assert "[Command finished with exit code 0]" in first[2]  # the counter the commands share


@pytest.mark.slow
def test_a_task_opts_into_the_real_clock() -> None:
    state, obs = _episode({"clock": REAL})
    assert "The sandbox's clock is the recording machine's real clock." in state
    assert obs[0].startswith(datetime.now(UTC).strftime("%Y-"))
    assert "No such file" in obs[2]  # no libfaketime, no counter
