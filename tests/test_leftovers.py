"""Nothing outlives a killed run past the next ``agentworld`` command or environment start,
and live runs are never swept.

The kill tests start real ``agentworld collect`` processes with a private TMPDIR (so they
only ever look at their own leftovers, whatever else runs on the machine), kill them with
SIGKILL mid-episode, then start an environment of another kind, or the next ``agentworld``
command, in a fresh process and check the host: folders, /proc/mounts, cgroups, processes.
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
from agentworld.envs.sweep import (
    MCP_PREFIX,
    SANDBOX_PREFIX,
    SNAPSHOT_PREFIX,
    SWE_SITE_PREFIX,
    find_leftovers,
    forget,
    kill_orphans,
    swe_cache_dir,
    sweep_leftovers,
    sweep_now,
)

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


def _require_sandbox() -> None:
    from agentworld.envs.sandbox import SandboxUnavailable, rootfs_path
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
    except SandboxUnavailable as exc:
        pytest.fail(f"{exc.message} ({exc.fix})")
    assert rootfs_path().exists(), "no sandbox root filesystem (run scripts/setup.sh)"


def _recorded_cgroups(*folders: Path) -> list[Path]:
    """The cgroups that ``folders`` record in their ``cgroup`` file (those that exist now)."""
    listed = [Path(x) for f in folders if (f / "cgroup").exists() for x in (f / "cgroup").read_text().split()]
    return [d for d in listed if d.is_dir()]


def _cgroup_procs(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _busy(folders: list[Path], mounts: int = 0) -> list[Path]:
    """Those of ``folders`` with ``mounts`` mounts or more and processes in a recorded cgroup."""
    return [d for d in folders if len(_mounts_under(d)) >= mounts and any(_cgroup_procs(c) for c in _recorded_cgroups(d))]


def _collect_and_kill(domain: str, args: list[str], tmp_path: Path, what: str, ready) -> tuple[str, set, list[Path]]:  # noqa: ANN001
    """Start ``agentworld collect <domain>`` with TMPDIR=tmp_path/tmp, SIGKILL it once ``ready()``
    holds; return its owner token, the processes it had started and the cgroups recorded."""
    tmpdir = tmp_path / "tmp"
    cmd = [sys.executable, "-m", "agentworld", "collect", domain, "--out", str(tmp_path / f"{domain}.jsonl"),
           "--test-episodes", "0", *args]
    proc = subprocess.Popen(cmd, env=_env(tmpdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        owner = _wait_for("the collector to start", lambda: start_time(proc.pid) and token(proc.pid), proc=proc)
        _wait_for(what, ready, proc=proc)
        running = identities(descendants({proc.pid}) | tagged(owner))
        cgroups = _recorded_cgroups(*tmpdir.iterdir())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return owner, running, cgroups


def _next_command_sweeps(tmpdir: Path, argv: list[str]) -> str:
    """Run the next ``agentworld`` command; it sweeps before anything of its own, even when it
    then stops at its first check (the unknown template or repository given here)."""
    res = subprocess.run([sys.executable, "-m", "agentworld", *argv], env=_env(tmpdir), capture_output=True, text=True,
                         timeout=300)
    output = " ".join((res.stdout + res.stderr).split())
    assert "left behind by killed runs" in output, output
    return output


def _assert_nothing_left(tmpdir: Path, owner: str, running: set, cgroups: list[Path]) -> None:
    # Untagged helpers end on their own once what they serve is gone (Playwright's driver, with
    # its temporary folders, once the browser is killed): a few seconds at most.
    deadline = time.monotonic() + 15
    while (list(tmpdir.iterdir()) or still_running(running)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(tmpdir.iterdir()) == []
    assert _mounts_under(tmpdir) == []
    assert [c for c in cgroups if c.exists()] == []
    assert still_running(running) == set() and tagged(owner) == set()


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
    _require_sandbox()
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


# -- the start of every command that can own environments ----------------------------------------


@pytest.mark.parametrize(("argv", "sweeps"), [
    (["collect", "swe", "--episodes", "1"], True), (["collect", "mcp"], True), (["env", "serve", "swe-v1"], True),
    (["sim", "serve"], True), (["sim", "drift"], True), (["agent", "rollout"], True), (["agent", "train"], True),
    (["collect", "swe", "--help"], False), (["--help"], False), ([], False), (["collect"], False),
    (["env", "sweep", "--dry-run"], False), (["env", "list"], False), (["data", "build"], False),
    (["bench", "infer"], False), (["agent", "tasks"], False), (["serve"], False),
])
def test_which_commands_sweep_when_they_start(argv: list[str], sweeps: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentworld.envs.sweep
    from agentworld.cli import sweep_at_start
    from agentworld.envs.sweep import SweepReport

    calls = []
    monkeypatch.setattr(agentworld.envs.sweep, "sweep_now", lambda *a, **k: calls.append(a) or SweepReport())
    sweep_at_start(argv)
    assert bool(calls) is sweeps


def test_help_stays_free_of_the_sweep(tmp_path: Path) -> None:
    left = tmp_path / f"{MCP_PREFIX}left"
    left.mkdir()
    (left / "owner").write_text(_dead_token())
    for argv in (["--help"], ["collect", "mcp", "--help"]):
        res = subprocess.run([sys.executable, "-m", "agentworld", *argv], env=_env(tmp_path), capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0, res.stderr
    assert left.exists()


# -- agentworld env sweep ---------------------------------------------------------------------------


def _cgroup_with(limits_pids: int = 16) -> tuple[object, subprocess.Popen]:
    """A real cgroup with a process in it."""
    from agentworld.envs.sandbox.limits import Cgroup, Limits

    cg = Cgroup.create(Limits(pids=limits_pids))
    if cg is None:
        pytest.fail("cgroups are not writable here (run as root with /sys/fs/cgroup writable)")
    proc = subprocess.Popen(["/bin/sh", "-c", f"{cg.join_script()}exec sleep 120"])
    _wait_for("the process to join its cgroup", lambda: proc.pid in cg.pids())
    return cg, proc


def _planted_sandbox(base: Path, name: str, owner: str) -> tuple[Path, object, subprocess.Popen]:
    """A sandbox folder as a run leaves it: owner record, a tmpfs, a recorded cgroup with a process."""
    folder = base / f"{SANDBOX_PREFIX}{name}"
    (folder / "layer").mkdir(parents=True)
    (folder / "owner").write_text(owner + "\n")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder / "layer")], capture_output=True, text=True)
    assert r.returncode == 0, f"cannot mount a tmpfs (run as root): {r.stderr}"
    cg, proc = _cgroup_with()
    (folder / "cgroup").write_text("".join(f"{d}\n" for d in cg.dirs))
    return folder, cg, proc


def _sweep_cli(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(_env(base), COLUMNS="400")  # full paths in the table
    return subprocess.run([sys.executable, "-m", "agentworld", "env", "sweep", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_env_sweep_removes_dead_runs_leftovers_only(tmp_path: Path) -> None:
    base = tmp_path / "tmp"
    base.mkdir()
    dead_owner = _dead_token()
    dead, dead_cg, inside = _planted_sandbox(base, "dead", dead_owner)
    live, live_cg, live_proc = _planted_sandbox(base, "live", token())
    orphan = subprocess.Popen(["sleep", "120"], env={OWNER_VAR: dead_owner})  # a launcher of the killed run
    procs = [inside, live_proc, orphan]
    try:
        res = _sweep_cli(base, "--dry-run")
        assert res.returncode == 0, res.stderr
        listed = " ".join(res.stdout.split())
        assert "would remove 1 sandbox(es), 1 mount(s), 1 cgroup(s), 2 process(es)" in listed
        for shown in (str(dead), str(dead / "layer"), str(dead_cg.dirs[0]), str(inside.pid), str(orphan.pid)):
            assert shown in res.stdout
        assert str(live) not in res.stdout
        # Nothing removed: the folder, its mount, its cgroup and both processes are all still there.
        assert dead.exists() and _mounts_under(dead) == [str(dead / "layer")] and all(d.exists() for d in dead_cg.dirs)
        assert inside.poll() is None and orphan.poll() is None

        res = _sweep_cli(base)
        assert res.returncode == 0, res.stderr
        assert "removed 1 sandbox(es), 1 mount(s), 1 cgroup(s), 2 process(es)" in " ".join(res.stdout.split())
        assert not dead.exists() and _mounts_under(dead) == [] and not any(d.exists() for d in dead_cg.dirs)
        assert inside.wait(timeout=10) == -signal.SIGKILL and orphan.wait(timeout=10) == -signal.SIGKILL
        # The live run's sandbox is untouched.
        assert live.exists() and _mounts_under(live) == [str(live / "layer")] and all(d.exists() for d in live_cg.dirs)
        assert live_proc.poll() is None and live_proc.pid in live_cg.pids()
        assert "nothing left behind by killed runs" in _sweep_cli(base).stdout
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for cg in (dead_cg, live_cg):
            cg.remove()
        for folder in (dead, live):
            subprocess.run(["umount", str(folder / "layer")], capture_output=True)


def test_an_ownerless_folder_is_swept_only_when_empty_and_old(tmp_path: Path) -> None:
    """Made by a run killed before it wrote the owner record (mkdtemp, then the record)."""
    old_empty, fresh_empty, old_full = (tmp_path / f"{SNAPSHOT_PREFIX}{n}" for n in ("old", "fresh", "full"))
    for d in (old_empty, fresh_empty, old_full):
        d.mkdir()
    (old_full / "upper").mkdir()
    for d in (old_empty, old_full):
        os.utime(d, (time.time() - 3600, time.time() - 3600))
    assert [i.name for i in find_leftovers(tmp_path) if i.folder == ""] == [str(old_empty)]
    assert sweep_now(tmp_path).count("folder") == 1
    assert not old_empty.exists() and fresh_empty.exists() and old_full.exists()


def test_sweep_prefixes_are_the_makers() -> None:
    from agentworld.envs.sandbox import sandbox

    assert (SANDBOX_PREFIX, SNAPSHOT_PREFIX) == (sandbox.PREFIX, sandbox.SNAPSHOT_PREFIX)


# -- the SWE cache ----------------------------------------------------------------------------------


def test_swe_cache_is_found_like_the_env_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld.envs.swe import repos

    monkeypatch.delenv("AGENTWORLD_SWE_CACHE", raising=False)
    assert swe_cache_dir() == repos.cache_dir()
    monkeypatch.setenv("AGENTWORLD_SWE_CACHE", str(tmp_path))
    assert swe_cache_dir() == repos.cache_dir() == tmp_path


def test_a_test_site_half_unpacked_by_a_killed_run_is_swept(tmp_path: Path) -> None:
    from agentworld.envs.swe import repos

    wheels = repos.cache_dir() / "wheels"
    assert list(wheels.glob("*.whl")), "no SWE wheels cached (run scripts/setup.sh)"
    cache = tmp_path / "swe"
    cache.mkdir()
    (cache / "wheels").symlink_to(wheels)
    env = dict(_env(tmp_path), AGENTWORLD_SWE_CACHE=str(cache))
    stalls = textwrap.dedent("""
        import time, zipfile
        from agentworld.envs.swe import repos

        zipfile.ZipFile.extractall = lambda *a, **k: (print("unpacking", flush=True), time.sleep(120))
        repos.test_site()
    """)
    child = subprocess.Popen([sys.executable, "-c", stalls], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "unpacking"  # type: ignore[union-attr]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    (partial,) = cache.glob(f"{SWE_SITE_PREFIX}*")
    assert owner_alive(partial) is False
    res = subprocess.run([sys.executable, "-m", "agentworld", "env", "sweep"], env=dict(env, COLUMNS="400"),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "removed 1 SWE folder(s)" in res.stdout and not partial.exists()
    # Unpacked to the end, the site carries no owner record into the workspaces it is copied to.
    site = repos.test_site(cache)
    assert (site / "pytest").is_dir() and not (site / "owner").exists()
    assert sorted(p.name for p in cache.iterdir()) == ["test-site", "wheels"]


@pytest.mark.slow
@pytest.mark.sandbox
def test_kill_9_of_collect_swe_leaves_nothing(sandbox_tmp: Path) -> None:
    """The red team's case: two episodes killed mid-test-run leave two sandbox folders, their
    six mounts (tmpfs layer, overlay root, user namespace) and two cgroups."""
    _require_sandbox()
    tmpdir = sandbox_tmp / "tmp"
    tmpdir.mkdir()

    def tests_running() -> list[Path]:
        return _busy(list(tmpdir.glob(f"{SANDBOX_PREFIX}*")), mounts=3)

    owner, running, cgroups = _collect_and_kill("swe", ["--episodes", "4", "--workers", "2"], sandbox_tmp,
                                                "a repository's tests running in a sandbox", tests_running)
    assert _mounts_under(tmpdir) and cgroups, "the kill should leave the sandboxes' mounts and cgroups behind"
    assert {d.name[:len(SANDBOX_PREFIX)] for d in tmpdir.iterdir()} == {SANDBOX_PREFIX}

    output = _next_command_sweeps(tmpdir, ["collect", "swe", "--repo", "no-such-repo"])
    assert "sandbox(es)" in output and "mount(s)" in output and "cgroup(s)" in output
    _assert_nothing_left(tmpdir, owner, running, cgroups)


@pytest.mark.slow
@pytest.mark.sandbox
def test_kill_9_of_collect_os_leaves_nothing(sandbox_tmp: Path) -> None:
    _require_sandbox()
    from agentworld.envs.os.rootfs import desktop_rootfs

    desktop_rootfs(build=False)  # fails with the setup hint when the desktop root is not built
    tmpdir = sandbox_tmp / "tmp"
    tmpdir.mkdir()

    def desktop_up() -> list[Path]:
        return _busy(list(tmpdir.glob(f"{SANDBOX_PREFIX}*")), mounts=3)

    owner, running, cgroups = _collect_and_kill("os", ["--episodes", "4", "--workers", "1", "--no-build"], sandbox_tmp,
                                                "a desktop session in a sandbox", desktop_up)
    assert _mounts_under(tmpdir) and cgroups, "the kill should leave the sandbox's mounts and cgroup behind"

    _next_command_sweeps(tmpdir, ["collect", "os", "--template", "no-such-template", "--no-build"])
    _assert_nothing_left(tmpdir, owner, running, cgroups)


@pytest.mark.slow
def test_kill_9_of_collect_web_leaves_nothing(sandbox_tmp: Path) -> None:
    from agentworld.envs.sweep import WEB_PREFIX
    from agentworld.envs.web.browser import CHROMIUM

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing (run scripts/setup.sh)"
    tmpdir = sandbox_tmp / "tmp"
    tmpdir.mkdir()

    def browser_up() -> list[int]:  # mid-episode: Chromium runs in its jail's cgroup (the sites in theirs)
        jailed = {pid for c in _recorded_cgroups(*tmpdir.glob(f"{WEB_PREFIX}*")) for pid in _cgroup_procs(c)}
        return [pid for pid in jailed if _comm(pid).startswith("chrom")]

    owner, running, cgroups = _collect_and_kill("web", ["--episodes", "4", "--workers", "1"], sandbox_tmp,
                                                "a browser in its jail", browser_up)
    assert tagged(owner), "the kill should leave the site servers and the browser running"
    assert list(tmpdir.glob(f"{WEB_PREFIX}*")) and cgroups

    _next_command_sweeps(tmpdir, ["collect", "web", "--template", "no-such-template"])
    _assert_nothing_left(tmpdir, owner, running, cgroups)


@pytest.mark.slow
def test_kill_9_of_collect_search_leaves_nothing_to_sweep(tmp_path: Path) -> None:
    """Search episodes keep everything in memory: a kill leaves no folder, mount or process."""
    from agentworld.envs.search import CorpusConfig
    from agentworld.envs.search.index import build_corpus

    corpus = tmp_path / "corpus"
    build_corpus(corpus, CorpusConfig(max_pages=8))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "search.jsonl"

    def recording() -> bool:
        return out.exists() and bool(out.read_text().strip())

    owner, running, _ = _collect_and_kill("search", ["--corpus", str(corpus), "--no-build", "--episodes", "500",
                                                     "--workers", "2"], tmp_path, "a recorded episode", recording)
    assert list(tmpdir.iterdir()) == [] and _mounts_under(tmp_path) == []
    _wait_for("the collector's children to end", lambda: not still_running(running), timeout_s=10)
    assert tagged(owner) == set()
