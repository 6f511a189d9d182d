"""Nothing outlives a killed run past the next environment start, and live runs are never swept.

The kill tests start real ``agentworld collect`` processes with a private TMPDIR (so they
only ever look at their own leftovers, whatever else runs on the machine), kill them with
SIGKILL mid-episode, then start an environment of another kind in a fresh process and
check the host: folders, /proc/mounts, cgroups, processes.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _procs import cmdline, descendants, identities, processes, still_running, tagged

from agentworld.envs._owner import OWNER_VAR, alive, owner_alive, start_time, token, write_owner
from agentworld.envs.mcp import McpEnv, missing_servers
from agentworld.envs.sweep import MCP_PREFIX, forget, kill_orphans, sweep_leftovers, sweep_now

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


def _dead_token() -> str:
    """The token of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["sleep", "30"])
    tok = token(p.pid)
    p.kill()
    p.wait()
    return tok


def _env(tmpdir: Path) -> dict[str, str]:
    return dict(os.environ, TMPDIR=str(tmpdir), PYTHONPATH=str(REPO / "src"))


def _wait_for(what: str, check, timeout_s: float = 180.0, proc: subprocess.Popen | None = None):  # noqa: ANN001
    """Poll ``check`` until it returns something truthy (bounded); fail with ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"collector exited ({proc.returncode}) before {what}:\n{out[-3000:]}")
        if result := check():
            return result
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _start_env_elsewhere(tmpdir: Path, code: str) -> None:
    """Start an environment in a fresh process (its first start sweeps)."""
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_env(tmpdir), capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def _mounts_under(path: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(path))]


# -- owners -------------------------------------------------------------------------------------


def test_owner_token_tells_a_recycled_pid_apart() -> None:
    mine = token()
    assert alive(mine) and alive(str(os.getpid()))  # bare pids (older owner files) still read
    pid, _, start = mine.partition(":")
    assert not alive(f"{pid}:{int(start) + 1}")  # same pid, another process
    assert not alive(_dead_token())
    zombie = subprocess.Popen(["true"])
    _wait_for("the child to exit", lambda: Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1][0] == "Z")
    assert start_time(zombie.pid) is None  # exited, not yet reaped: dead all the same
    zombie.wait()


def test_kill_orphans_spares_live_owners(tmp_path: Path) -> None:
    orphan = subprocess.Popen(["sleep", "60"], env={OWNER_VAR: _dead_token()})
    owned = subprocess.Popen(["sleep", "60"], env={OWNER_VAR: token()})
    try:
        assert kill_orphans() >= 1
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert owned.poll() is None
    finally:
        for p in (orphan, owned):
            p.kill()
            p.wait()


def test_sweep_removes_dead_owners_folders_only(tmp_path: Path) -> None:
    dead, live, unknown = (tmp_path / f"{MCP_PREFIX}{n}" for n in ("dead", "live", "unknown"))
    for d in (dead, live, unknown):
        d.mkdir()
        (d / "workspace").mkdir()
    (dead / "owner").write_text(_dead_token() + "\n")
    write_owner(live)
    report = sweep_now(tmp_path)
    assert report.mcp_dirs == 1 and not dead.exists()
    assert live.exists() and unknown.exists()  # a live run's, and one with no owner record
    assert owner_alive(live) is True and owner_alive(unknown) is None


def test_sweep_runs_once_per_process(tmp_path: Path) -> None:
    forget()
    try:
        first = sweep_leftovers(tmp_path)
        late = tmp_path / f"{MCP_PREFIX}late"
        late.mkdir()
        (late / "owner").write_text(_dead_token())
        assert sweep_leftovers(tmp_path) is first and late.exists()  # cached: no second look
        forget()
        assert sweep_leftovers(tmp_path).mcp_dirs == 1 and not late.exists()
    finally:
        forget()


def test_any_env_start_sweeps(tmp_path: Path) -> None:
    left = tmp_path / f"{MCP_PREFIX}left"
    left.mkdir()
    (left / "owner").write_text(_dead_token())
    _start_env_elsewhere(tmp_path, """
        from agentworld.envs.base import Env, Reset, Step

        class Minimal(Env):
            def reset(self, *, seed=None, options=None): return Reset("", {})
            def step(self, action): return Step("", 0.0, True, False, {})

        Minimal()
    """)
    assert not left.exists()


def test_collect_commands_sweep_and_say_so(tmp_path: Path) -> None:
    left = tmp_path / f"{MCP_PREFIX}left"
    left.mkdir()
    (left / "owner").write_text(_dead_token())
    cmd = [sys.executable, "-m", "agentworld", "collect", "mcp", "--out", str(tmp_path / "none.jsonl"),
           "--episodes", "0", "--test-episodes", "0"]
    res = subprocess.run(cmd, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "removed 1 MCP folder(s) left behind by killed runs" in " ".join((res.stdout + res.stderr).split())
    assert not left.exists()


# -- MCP folders on normal close --------------------------------------------------------------


@pytest.fixture()
def mcp_ready() -> None:
    if problems := missing_servers(["memory"]):
        pytest.fail("MCP servers missing (run scripts/setup.sh):\n" + "\n".join(problems))


def test_mcp_folders_never_outlive_the_env(tmp_path: Path, mcp_ready: None) -> None:
    env = McpEnv(root=tmp_path, servers=["memory"])
    env.reset()
    (first,) = tmp_path.glob(f"{MCP_PREFIX}*")
    assert owner_alive(first) is True
    env.reset()
    assert not first.exists() and len(list(tmp_path.glob(f"{MCP_PREFIX}*"))) == 1
    env.close()
    assert list(tmp_path.iterdir()) == []
    forgotten = McpEnv(root=tmp_path, servers=["memory"])
    forgotten.reset()
    forgotten.hub.close()
    del forgotten  # never closed: garbage collection still removes the folder
    gc.collect()
    assert list(tmp_path.iterdir()) == []


# -- kill -9 of real collecting processes ---------------------------------------------------------


@pytest.mark.slow
def test_kill_9_of_collect_mcp_leaves_nothing(tmp_path: Path, mcp_ready: None) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    cmd = [sys.executable, "-m", "agentworld", "collect", "mcp", "--out", str(tmp_path / "mcp.jsonl"),
           "--episodes", "200", "--test-episodes", "0", "--template", "memory", "--workers", "2"]
    proc = subprocess.Popen(cmd, env=_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        owner = _wait_for("the collector to start", lambda: start_time(proc.pid) and token(proc.pid), proc=proc)
        launchers = _wait_for("MCP servers to run", lambda: tagged(owner), proc=proc)
        _wait_for("an episode folder", lambda: list(tmpdir.glob(f"{MCP_PREFIX}*")), proc=proc)
        running = identities(launchers | descendants(launchers))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = list(tmpdir.glob(f"{MCP_PREFIX}*"))
    assert left, "the kill should leave episode folders behind"

    _start_env_elsewhere(tmpdir, """
        from agentworld.envs.base import Env, Reset, Step

        class Minimal(Env):
            def reset(self, *, seed=None, options=None): return Reset("", {})
            def step(self, action): return Step("", 0.0, True, False, {})

        Minimal()
    """)
    assert list(tmpdir.iterdir()) == []
    assert still_running(running) == set() and tagged(owner) == set()
    assert _mounts_under(tmp_path) == []


@pytest.mark.slow
@pytest.mark.sandbox
def test_kill_9_of_collect_terminal_leaves_nothing(sandbox_tmp: Path) -> None:
    tmp_path = sandbox_tmp
    from agentworld.envs.sandbox import SandboxUnavailable, rootfs_path
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
    except SandboxUnavailable as exc:
        pytest.fail(f"{exc.message} ({exc.fix})")
    assert rootfs_path().exists(), "no sandbox root filesystem (run scripts/setup.sh)"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    cmd = [sys.executable, "-m", "agentworld", "collect", "terminal", "--out", str(tmp_path / "t.jsonl"),
           "--episodes", "50", "--test-episodes", "0", "--no-build", "--workers", "1"]
    proc = subprocess.Popen(cmd, env=_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def tmux_servers() -> set[int]:
        return {pid for pid in processes() if "tmux" in cmdline(pid) and str(tmpdir) in cmdline(pid)}

    def sandbox_busy() -> set[int]:
        servers = tmux_servers()
        return servers if servers and descendants(servers) and _mounts_under(tmpdir) else set()

    try:
        servers = _wait_for("a sandboxed shell in tmux", sandbox_busy, proc=proc)
        inside = descendants(servers)
        running = identities(servers | inside)
        cgroups = set()
        for pid in inside:
            for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                if "agentworld" in path:
                    for controller in controllers.split(",") if controllers else ["unified"]:
                        cgroups.add(Path("/sys/fs/cgroup") / (controller or "unified") / path.lstrip("/"))
        cgroups = {c for c in cgroups if c.exists()}
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _mounts_under(tmpdir), "the kill should leave the sandbox's mounts behind"

    _start_env_elsewhere(tmpdir, "from agentworld.envs.mcp import McpEnv; McpEnv()")
    assert list(tmpdir.iterdir()) == []
    assert _mounts_under(tmpdir) == []
    assert [c for c in cgroups if c.exists()] == []
    assert still_running(running) == set() and tmux_servers() == set()
