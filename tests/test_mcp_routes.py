"""Routes from an MCP reset request or a server to the host, each tried.

- Reset options that plant git configuration (a clean filter that makes git link the
  repository to a host folder, then a worktree file written through that link) are
  refused before anything runs, in every spelling of ``.git``; the worktree is written
  inside the sandbox, never by the host.
- An episode's servers (and its git setup) run in one cgroup with memory, process and
  CPU limits; the workspace is a tmpfs of ``Limits.disk_mb``, and a full one is reported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.envs.mcp import McpEnv, missing_servers, server_spec
from agentworld.envs.mcp.episode_folder import EpisodeFolder
from agentworld.envs.mcp.servers import Limits, confined_argv, hand_over, server_env
from agentworld.envs.sandbox.limits import Cgroup
from agentworld.envs.sweep import MCP_PREFIX

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(bool(missing_servers(["git", "filesystem"])), reason="MCP servers not installed")]

_FILTER = "[filter \"x\"]\n\tclean = sh -c 'ln -s {target} /workspace/repo/evil; cat'\n"


def _planted(target: Path, git_dir: str) -> dict:
    return {"servers": ["git"], "repo": {
        "commits": [{"message": "init", "files": {f"{git_dir}/config": _FILTER.format(target=target),
                                                  ".gitattributes": "* filter=x\n", "a.txt": "a\n"}}],
        "worktree": {"evil/pwned": "written as root?\n"}}}


@pytest.mark.parametrize("git_dir", [".git", ".GIT", ".git.", "sub/.git", ".Git "])
def test_planted_git_config_is_refused_and_the_host_folder_untouched(tmp_path: Path, git_dir: str) -> None:
    canary = tmp_path / "host-folder"
    canary.mkdir()
    root = tmp_path / "episodes"
    with McpEnv(root=root) as env:
        with pytest.raises(ValueError, match=r"\.git folder"):
            env.reset(options=_planted(canary, git_dir))
        assert list(canary.iterdir()) == []
        assert not list(root.glob(f"{MCP_PREFIX}*"))  # the refused reset left nothing behind
        assert str(root) not in Path("/proc/mounts").read_text()


def test_git_dir_paths_are_refused_in_every_tree(tmp_path: Path) -> None:
    with McpEnv(root=tmp_path) as env:
        for options in ({"files": {".git/hooks/pre-commit": "x"}}, {"site": {"a/.git/config": "x"}},
                        {"repo": {"commits": [], "worktree": {".git/config": "x"}}},
                        {"files": {"../escape": "x"}}, {"files": {"/etc/x": "x"}}, {"files": {"": "x"}}):
            with pytest.raises(ValueError):
                env.reset(options=options)


def test_worktree_edits_are_written_inside_the_sandbox(tmp_path: Path) -> None:
    """Uncommitted edits land in the repository as the servers' files, written by the
    sandboxed setup: the host never writes into a tree sandboxed git has touched."""
    opts = {"servers": ["git"], "repo": {"commits": [{"message": "init", "files": {"a.txt": "a\n"}}],
                                         "worktree": {"a.txt": "changed\n", "new/b.txt": "b\n"}}}
    with McpEnv(root=tmp_path) as env:
        ws = Path(env.reset(options=opts).info["workspace"])
        diff = json.loads(env.step(json.dumps({"name": "git_diff_unstaged",
                                               "arguments": {"repo_path": "/workspace/repo"}})).observation)
        assert "+changed" in diff["content"][0]["text"]
        assert (ws / "repo" / "new" / "b.txt").read_text() == "b\n"
        assert not (ws / ".commits").exists()  # the stage is gone


def test_servers_run_in_the_episodes_cgroup(tmp_path: Path) -> None:
    limits = Limits(memory_mb=768, pids=200)
    with McpEnv(root=tmp_path, servers=["git", "filesystem"], limits=limits) as env:
        env.reset(options={"repo": {"commits": [{"message": "init", "files": {"a.txt": "a\n"}}]}})
        dirs = [Path(d) for d in (env._tmp / "cgroup").read_text().split()]
        group = Cgroup(dirs)
        procs = group.pids()
        exes = {os.path.basename(os.readlink(f"/proc/{p}/exe")) for p in procs if os.path.exists(f"/proc/{p}/exe")}
        assert "node" in exes and any(e.startswith("python") for e in exes), exes
        for d in dirs:
            for name, want in (("pids.max", "200"), ("memory.max", str(768 << 20)),
                               ("memory.limit_in_bytes", str(768 << 20))):
                if (d / name).exists():
                    assert (d / name).read_text().strip() == want
    assert not any(d.exists() for d in dirs)  # closed with the episode


def _probe(folder: EpisodeFolder, script: str, limits: Limits) -> subprocess.CompletedProcess[str]:
    spec = dataclasses.replace(server_spec("time"), argv=("/bin/sh", "-c", script))
    hand_over(folder.workspace)
    return subprocess.run(confined_argv(spec, folder.workspace, limits, folder.cgroup_dirs), env=server_env(spec),
                          capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def _episode(tmp_path: Path, limits: Limits) -> Iterator[EpisodeFolder]:
    """An MCP episode's folder (tmpfs workspace, cgroup) that is gone afterwards, mounts included."""
    (tmp_path / "ep").mkdir()
    folder = EpisodeFolder.create(tmp_path / "ep", limits)
    try:
        yield folder
    finally:
        folder.remove()
    assert not (tmp_path / "ep").exists() and str(tmp_path / "ep") not in Path("/proc/mounts").read_text()


def test_a_server_fork_bomb_stops_at_the_process_limit(tmp_path: Path) -> None:
    limits = Limits(pids=40)
    with _episode(tmp_path, limits) as folder:
        assert folder.cgroup is not None
        res = _probe(folder, "n=0; for i in $(seq 1 200); do sleep 30 & n=$((n+1)); done 2>/dev/null; "
                             "ps -e --no-headers | wc -l", limits)
        assert folder.cgroup.pids_denied() > 0, res
        assert len(folder.cgroup.pids()) <= 40


def test_a_server_memory_hog_is_killed(tmp_path: Path) -> None:
    limits = Limits(memory_mb=96)
    with _episode(tmp_path, limits) as folder:
        assert folder.cgroup is not None
        res = _probe(folder, "python3 -c 'x = bytearray(400 << 20); print(len(x))'; echo rc=$?", limits)
        assert "rc=0" not in res.stdout, res
        assert folder.cgroup.oom_kills() > 0


def test_the_workspace_is_capped_and_off_the_host_disk(tmp_path: Path) -> None:
    limits = Limits(disk_mb=8)
    with _episode(tmp_path, limits) as folder:
        res = _probe(folder, "head -c 50M /dev/zero > /workspace/fill; echo rc=$?", limits)
        assert "No space left on device" in res.stderr, res
        assert folder.disk_full()
        # Off the host disk: the workspace is its own filesystem of the capped size (the host
        # disk's free space is no witness: other processes write to it meanwhile).
        assert os.stat(folder.workspace).st_dev != os.stat(tmp_path).st_dev
        st = os.statvfs(folder.workspace)
        assert st.f_blocks * st.f_frsize <= 8 << 20
        assert (folder.workspace / "fill").stat().st_size <= 8 << 20


def test_a_full_workspace_is_reported_on_the_step(tmp_path: Path) -> None:
    with McpEnv(root=tmp_path, servers=["filesystem"], limits=Limits(disk_mb=2)) as env:
        env.reset()
        call = {"name": "write_file", "arguments": {"path": "/workspace/files/big.txt", "content": "x" * 1_500_000}}
        step = env.step(json.dumps(call))
        assert step.info.get("disk_full") is True, (step.observation[:300], step.info)
