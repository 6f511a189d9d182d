"""The MCP environment against the real, pinned MCP servers (started in bubblewrap)."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs import make, record_episode, registered
from agentworld.envs.mcp import (
    SERVER_NAMES,
    TEMPLATES,
    McpEnv,
    McpHub,
    make_task,
    missing_servers,
    run_scripted,
    server_spec,
)
from agentworld.envs.mcp.servers import confined_argv, hand_over, server_env
from agentworld.records.bench import load_bench_dir

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def _servers_installed() -> None:
    problems = missing_servers()
    assert not problems, "MCP servers missing (run scripts/setup.sh):\n" + "\n".join(problems)


@pytest.fixture()
def env(tmp_path: Path):
    with McpEnv(root=tmp_path) as e:
        yield e


def _obs(step_obs: str) -> dict:
    return json.loads(step_obs)


@pytest.mark.slow
def test_all_servers_start_and_list_their_tools(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for sub in ("files", "site", "repo"):
        (ws / sub).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    with McpHub([server_spec(n) for n in SERVER_NAMES], ws) as hub:
        servers = {ref.server for ref in hub.tools.values()}
        assert servers == set(SERVER_NAMES)
        for name in ("convert_time", "git_log", "fetch", "read_text_file", "create_entities", "echo",
                     "sequentialthinking"):
            assert name in hub.tools
            assert hub.tools[name].schema["inputSchema"]["type"] == "object"
        assert hub.server_info["time"]["version"] == "2026.10.19"


# Templates whose results depend only on the actions (time depends on the clock; fetch is
# replayed on its own below, in fewer calls, since each page goes through jsdom).
DETERMINISTIC = ["filesystem", "git", "memory", "everything", "sequential-thinking"]
# The reference server stamps some resources with the wall-clock time.
_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}\s?[AP]M")


@pytest.mark.slow
@pytest.mark.parametrize("template", DETERMINISTIC)
def test_recorded_observations_match_a_replay(env: McpEnv, template: str) -> None:
    task = make_task(7, template)
    traj = run_scripted(env, task, trajectory_id=f"t-{template}", seed=7)
    assert len(traj.turns) >= 6
    assert traj.tools == env.hub.tool_schemas()
    for turn in traj.turns:
        call = json.loads(turn.action)
        assert set(call) == {"name", "arguments"}
        obs = _obs(turn.observation)
        assert "error" in obs or ("content" in obs and isinstance(obs["isError"], bool))
    # Some scripted mistakes must come back as real errors.
    assert any(_obs(t.observation).get("isError") or "error" in _obs(t.observation) for t in traj.turns)
    replay = record_episode(env, [t.action for t in traj.turns], trajectory_id="replay",
                            options=task.reset_options())
    for a, b in zip(traj.turns, replay.turns, strict=True):
        assert _CLOCK.sub("<t>", a.observation) == _CLOCK.sub("<t>", b.observation), a.action


@pytest.mark.slow
def test_fetch_reads_only_the_local_site_and_replays(env: McpEnv) -> None:
    task = make_task(5, "fetch")
    env.reset(options=task.reset_options())
    actions = [
        '{"name": "fetch", "arguments": {"url": "http://localhost:8000/", "max_length": 150}}',
        '{"name": "fetch", "arguments": {"url": "http://localhost:8000/private/secret.html"}}',
        '{"name": "fetch", "arguments": {"url": "http://localhost:8000/nope.html"}}',
    ]
    first = [_obs(env.step(a).observation) for a in actions]
    assert first[0]["isError"] is False and first[0]["content"][0]["text"].startswith("Contents of http://localhost:8000/")
    assert "robots.txt" in first[1]["content"][0]["text"] and first[1]["isError"] is True
    assert "status code 404" in first[2]["content"][0]["text"]
    replay = record_episode(env, actions, trajectory_id="r", options=task.reset_options())
    assert [_obs(t.observation) for t in replay.turns] == first


def test_errors_are_the_servers_own(env: McpEnv) -> None:
    env.reset(options={"servers": ["filesystem", "git"], "files": {"a.txt": "alpha\n"},
                       "repo": {"commits": [{"message": "init", "files": {"x.py": "x = 1\n"}}]}})
    ok = _obs(env.step('{"name": "read_text_file", "arguments": {"path": "/workspace/files/a.txt"}}').observation)
    assert ok["content"][0]["text"] == "alpha\n" and ok["isError"] is False
    assert ok["structuredContent"] == {"content": "alpha\n"}
    denied = _obs(env.step('{"name": "read_text_file", "arguments": {"path": "/etc/passwd"}}').observation)
    assert denied["isError"] is True and "outside allowed directories" in denied["content"][0]["text"]
    bad = _obs(env.step('{"name": "git_show", "arguments": {"repo_path": "/workspace/repo", "revision": "nope"}}').observation)
    assert bad["isError"] is True and "nope" in bad["content"][0]["text"]
    log = _obs(env.step('{"name": "git_log", "arguments": {"repo_path": "/workspace/repo"}}').observation)
    assert "Message: init" in log["content"][0]["text"]
    invalid = _obs(env.step('{"name": "write_file", "arguments": {"path": "/workspace/files/b.txt"}}').observation)
    assert invalid["isError"] is True and "content" in invalid["content"][0]["text"]
    # A tool no server declares: routed to the first server, whose protocol error the client sees.
    unknown = _obs(env.step('{"name": "no_such_tool", "arguments": {}}').observation)
    assert unknown["isError"] is True or unknown["error"]["code"] == -32602
    assert _obs(env.step("not json").observation)["error"]["code"] == -32700
    assert _obs(env.step('{"arguments": {}}').observation)["error"]["code"] == -32602


def test_workspace_paths_are_the_same_in_every_episode(env: McpEnv) -> None:
    seen = []
    for _ in range(2):
        env.reset(options={"servers": ["filesystem"], "files": {"d/n.md": "hi"}})
        seen.append(env.step('{"name": "list_allowed_directories", "arguments": {}}').observation)
    assert seen[0] == seen[1] and "/workspace/files" in seen[0]


def test_sandbox_blocks_writes_outside_and_the_network(tmp_path: Path, host_http_port: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    hand_over(ws)
    port = host_http_port  # a host server the sandbox must not reach
    probe = (
        "import socket, sys\n"
        "open('/workspace/ok.txt', 'w').write('ok')\n"
        "try:\n    open(sys.argv[1], 'w'); print('WROTE')\nexcept OSError: print('NOWRITE')\n"
        "s = socket.socket()\ns.settimeout(2)\n"
        "try:\n    s.connect(('127.0.0.1', int(sys.argv[2]))); print('NET')\nexcept OSError: print('NONET')\n"
    )
    outside = tmp_path / "outside.txt"
    spec = dataclasses.replace(server_spec("time"), argv=("python3", "-c", probe, str(outside), str(port)))
    res = subprocess.run(confined_argv(spec, ws), env=server_env(spec), capture_output=True, text=True, timeout=60)
    # Sanity: the host itself reaches the server, so NONET below is the sandbox's doing.
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["NOWRITE", "NONET"]
    assert (ws / "ok.txt").read_text() == "ok" and not outside.exists()


def test_registered_and_seeded() -> None:
    assert "mcp-v1" in registered()
    assert isinstance(make("mcp-v1"), McpEnv)
    a, b = make_task(11), make_task(11)
    assert a.template == b.template and a.options == b.options and a.description == b.description
    assert {make_task(s).template for s in range(40)} == set(TEMPLATES)


@pytest.mark.slow
def test_collect_cli_writes_bench_and_resumes(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["collect", "mcp", "--out", str(tmp_path / "mcp.jsonl"), "--bench-dir", str(tmp_path / "bench"),
            "--episodes", "1", "--test-episodes", "2", "--template", "memory", "--template", "time"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    bench = load_bench_dir(tmp_path / "bench")
    assert not bench.errors and {s.domain for s in bench.samples} == {"mcp"}
    # ids name the template (the resume key): two templates on one seed are two episodes
    assert {s.trajectory_id for s in bench.samples} == {"mcp-test-time-1000000", "mcp-test-time-1000001"}
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 recorded, 3 already there" in " ".join(again.output.split())


@pytest.mark.slow
def test_committed_benchmark_trajectories_replay(env: McpEnv) -> None:
    """The recorded ground truth in benchmarks/local still matches the real servers."""
    from agentworld.records.trajectory import read_trajectories

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "local" / "trajectories" / "mcp.jsonl"
    trajs = read_trajectories(path, strict=True).items
    picked = {}
    for t in trajs:
        if t.provenance.task in ("git", "sequential-thinking") and t.provenance.split == "test":
            picked.setdefault(t.provenance.task, t)
    assert len(picked) == 2
    for traj in picked.values():
        task = make_task(traj.provenance.seed, traj.provenance.task)
        replay = record_episode(env, [t.action for t in traj.turns], trajectory_id="r", options=task.reset_options())
        assert [t.observation for t in replay.turns] == [t.observation for t in traj.turns], traj.id
        assert replay.tools == traj.tools and replay.initial_state == traj.initial_state


def test_pydantic_error_links_are_recorded_without_a_version(env: McpEnv) -> None:
    """A pydantic validation error from a Python server (git) records no pydantic version."""
    env.reset(options={"servers": ["git"], "repo": {"commits": [{"message": "init", "files": {"x.py": "x = 1\n"}}]}})
    obs = env.step('{"name": "git_add", "arguments": {"repo_path": "/workspace/repo", "files": []}}').observation
    assert "errors.pydantic.dev/latest/v/too_short" in obs
    assert not re.search(r"errors\.pydantic\.dev/\d", obs)


def test_unversioned_rewrites_only_the_version_segment() -> None:
    from agentworld.envs.mcp.versions import unversioned

    text = "visit https://errors.pydantic.dev/2.13/v/missing and https://errors.pydantic.dev/2.14/v/url_parsing"
    assert unversioned(text) == ("visit https://errors.pydantic.dev/latest/v/missing and "
                                 "https://errors.pydantic.dev/latest/v/url_parsing")
    assert unversioned("pydantic 2.13 at https://docs.pydantic.dev/2.13/") == "pydantic 2.13 at https://docs.pydantic.dev/2.13/"
