"""MCP servers see the episode's declared clock, not the host's: the same answers in every run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentworld.envs.clock import DEFAULT_START, REAL, TICK_S, Clock, find_library
from agentworld.envs.mcp import McpEnv, missing_servers
from agentworld.envs.mcp.servers import confined_argv, server_spec

pytestmark = pytest.mark.timeout(300)

_CALLS = [
    '{"name": "get_current_time", "arguments": {"timezone": "UTC"}}',
    '{"name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}',
    '{"name": "convert_time", "arguments": {"source_timezone": "Europe/Berlin", "time": "08:30", '
    '"target_timezone": "Asia/Singapore"}}',
    # The reference server stamps dynamic resources with the wall-clock time.
    '{"name": "get-resource-reference", "arguments": {"resourceType": "Text", "resourceId": 3}}',
    # A timer of a Node server (setTimeout): durations follow real time, so it completes.
    '{"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2}}',
    '{"name": "get_current_time", "arguments": {"timezone": "UTC"}}',
]


@pytest.fixture(scope="module", autouse=True)
def _servers_installed() -> None:
    problems = missing_servers(["time", "everything"])
    assert not problems, "MCP servers missing (run scripts/setup.sh):\n" + "\n".join(problems)


def _episode(tmp_path, options: dict) -> tuple[str, list[dict]]:
    with McpEnv(root=tmp_path) as env:
        first = env.reset(options={"servers": ["time", "everything"], **options}).observation
        return first, [json.loads(env.step(a).observation) for a in _CALLS]


def _text(obs: dict) -> str:
    return "\n".join(c.get("text") or c.get("resource", {}).get("text", "") for c in obs["content"])


@pytest.mark.slow
def test_time_and_everything_answer_the_declared_clock_in_every_run(tmp_path) -> None:
    state, first = _episode(tmp_path, {})
    _, again = _episode(tmp_path, {})
    assert first == again
    assert "wall clock reads 2026-01-15T09:30:00Z throughout the episode" in state
    assert first[0]["structuredContent"]["datetime"] == "2026-01-15T09:30:00+00:00" == first[5]["structuredContent"]["datetime"]
    assert first[1]["structuredContent"]["datetime"] == "2026-01-15T18:30:00+09:00"
    # convert_time takes the date from the clock: the declared day, whatever today is.
    assert first[2]["structuredContent"]["source"]["datetime"] == "2026-01-15T08:30:00+01:00"
    assert "created at 9:30:00 AM" in _text(first[3])
    assert "Long running operation completed" in _text(first[4]) and not first[4]["isError"]


@pytest.mark.slow
def test_a_task_declares_its_own_start_or_opts_into_the_real_clock(tmp_path) -> None:
    state, obs = _episode(tmp_path, {"clock": "2027-03-04T05:06:07+02:00"})
    assert "reads 2027-03-04T03:06:07Z" in state
    assert obs[0]["structuredContent"]["datetime"] == "2027-03-04T03:06:07+00:00"
    state, obs = _episode(tmp_path, {"clock": REAL})
    assert "the recording machine's real clock" in state
    shown = datetime.fromisoformat(obs[0]["structuredContent"]["datetime"])
    assert abs(shown - datetime.now(UTC)) < timedelta(hours=1)


def test_a_bad_clock_option_is_refused_before_anything_starts(tmp_path) -> None:
    with McpEnv(root=tmp_path) as env, pytest.raises(ValueError, match="ISO 8601 time with a zone"):
        env.reset(options={"servers": ["time"], "clock": "2026-01-15 09:30"})
    assert not list(tmp_path.iterdir())


def test_the_launcher_never_loads_libfaketime_only_the_server_does(tmp_path) -> None:
    """The clock is set by bwrap for the server alone: the root launcher, in the host's
    namespaces, runs without it (it would leave libfaketime's counters in the host's /dev/shm)."""
    argv = confined_argv(server_spec("time"), tmp_path)
    bwrap = argv.index("--", argv.index(str(tmp_path)))  # the launcher's ops end here
    tail = argv[bwrap:]
    env = {tail[i + 1]: tail[i + 2] for i, arg in enumerate(tail) if arg == "--setenv"}
    assert env["LD_PRELOAD"] == find_library() and env["FAKETIME"] == str(int(Clock.of().start.timestamp()))
    assert "LD_PRELOAD" not in " ".join(argv[:bwrap])
    assert "--setenv" not in confined_argv(server_spec("time", Clock.of(REAL)), tmp_path)


def test_clock_options_parse_and_declare_themselves() -> None:
    frozen = Clock.of()
    assert frozen.option == DEFAULT_START and frozen.tick_s is None and not frozen.monotonic
    assert frozen.env("/lib.so")["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    ticking = Clock.of("2026-06-01T12:00:00-04:00", tick_s=TICK_S, monotonic=True)
    assert ticking.option == "2026-06-01T16:00:00Z"
    assert ticking.env("/lib.so")["FAKETIME"] == f"@{int(ticking.start.timestamp())} i0.000010000"
    assert "FAKETIME_DONT_FAKE_MONOTONIC" not in ticking.env("/lib.so")
    assert "durations included" in ticking.describe("The sandbox's")
    assert Clock.of(REAL).env("/lib.so") == {} and Clock.of(REAL).real
    for bad in ("2026-01-15", "tomorrow", "2026-01-15T09:30:00", 5):
        with pytest.raises(ValueError, match="ISO 8601"):
            Clock.of(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must tick"):
        Clock.of(monotonic=True)
