"""Per-episode workspaces: the files, git repository and local site that servers work on.

A workspace is described by JSON-able options (recorded with the trajectory), so the
same episode can be rebuilt and replayed byte for byte:

- ``files``: ``{relative path: text}`` under ``files/`` (the filesystem server's root);
- ``site``: ``{relative path: html}`` under ``site/`` (served to the fetch server);
- ``repo``: ``{"commits": [{"message", "files"}], "worktree": {path: text}}`` -- a git
  repository under ``repo/`` built with real git, commits first, then uncommitted edits.

The host writes only into folders no sandboxed process has touched yet: ``files/`` and
``site/`` and the staged commits, all before the first sandboxed run. The repository
itself, uncommitted edits included, is written by git and ``cp`` inside the sandbox, so a
link that sandboxed code made can never redirect a host write. Paths that would plant
git's own configuration (a ``.git`` folder anywhere: hooks, filters, ``core.fsmonitor``,
``core.sshCommand``) are refused, so git never runs a program a request chose.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from agentworld.envs.mcp.servers import (
    GIT_ENV,
    WORKSPACE,
    Limits,
    ServerSpec,
    confined_argv,
    hand_over,
    server_env,
)


def check_path(rel: str) -> PurePosixPath:
    """``rel`` as a path that stays inside its folder and plants no git configuration."""
    path = PurePosixPath(rel)
    if not rel or path.is_absolute() or any(part in ("..", ".") for part in PurePosixPath(rel).parts) \
            or "\0" in rel or rel.endswith("/"):
        raise ValueError(f"workspace path must be a relative file path that stays inside: {rel!r}")
    if any(part.lower().rstrip(". ") == ".git" for part in path.parts):
        raise ValueError(f"workspace path {rel!r} is inside a .git folder: git's configuration and hooks are not "
                         "taken from a request (describe commits with 'repo': {'commits': [...]})")
    return path


def _write_tree(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` under ``root``, a folder the host made and no sandbox has touched."""
    for rel, text in files.items():
        target = root / check_path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8") as fh:  # exclusive: a path given twice is an error
            fh.write(text)


# Replays the staged commits, then copies the uncommitted edits, in one sandboxed run
# (one launch instead of two per commit). Git runs confined even here: the files and
# messages come from task options.
_BUILD_REPO = """set -e
cd {ws}/repo
git init -q -b main
for c in {ws}/{stage}/commits/*/; do
  [ -d "$c" ] || continue
  cp -R "$c/tree/." .
  git add -A
  git commit -q -F "$c/message"
done
if [ -d {ws}/{stage}/worktree ]; then cp -R {ws}/{stage}/worktree/. .; fi
"""
_STAGE = ".commits"


def _build_repo(workspace: Path, repo: dict[str, Any], limits: Limits, cgroup: tuple[Path, ...]) -> None:
    stage = workspace / _STAGE
    for i, commit in enumerate(repo.get("commits") or []):
        folder = stage / "commits" / f"{i:06d}"
        (folder / "tree").mkdir(parents=True)
        _write_tree(folder / "tree", commit.get("files") or {})
        (folder / "message").write_text(commit["message"], encoding="utf-8")
    if repo.get("worktree"):
        (stage / "worktree").mkdir(parents=True)
        _write_tree(stage / "worktree", repo["worktree"])
    hand_over(workspace)
    script = _BUILD_REPO.format(ws=WORKSPACE, stage=_STAGE)
    spec = ServerSpec("git-setup", "", ("/bin/sh", "-c", script), env=dict(GIT_ENV, HOME=WORKSPACE))
    setup_limits = Limits(cpu_s=30, file_mb=limits.file_mb, open_files=limits.open_files, tmp_mb=limits.tmp_mb)
    try:
        proc = subprocess.run(confined_argv(spec, workspace, setup_limits, cgroup), env=server_env(spec),
                              capture_output=True, text=True, timeout=120)
    finally:
        # rmtree neither follows links nor leaves its folder: safe on a tree git wrote.
        shutil.rmtree(stage, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the workspace's git repository failed: {proc.stderr.strip()}")


def build_workspace(workspace: Path, options: dict[str, Any], *, limits: Limits = Limits(),
                    cgroup: tuple[Path, ...] = ()) -> None:
    """Create ``workspace`` with the content ``options`` describe, owned by the servers' user.

    Every path is checked before anything is written, so a refused request leaves nothing.
    ``cgroup`` is the episode's (its limits bound the git setup too).
    """
    repo = options.get("repo") or {}
    for tree in (options.get("files") or {}, options.get("site") or {}, repo.get("worktree") or {},
                 *((c.get("files") or {}) for c in repo.get("commits") or [])):
        for rel in tree:
            check_path(rel)
    for sub in ("files", "site", "repo"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    _write_tree(workspace / "files", options.get("files") or {})
    _write_tree(workspace / "site", options.get("site") or {})
    if repo:
        _build_repo(workspace, repo, limits, cgroup)
    hand_over(workspace)


def describe_workspace(options: dict[str, Any]) -> str:
    """The initial state an agent (and a world model) is told about."""
    lines = [f"Workspace mounted at {WORKSPACE}."]
    if options.get("files"):
        lines.append(f"Files under {WORKSPACE}/files:")
        lines += [f"  {rel} ({len(text.encode())} bytes)" for rel, text in sorted(options["files"].items())]
    if options.get("repo"):
        repo = options["repo"]
        lines.append(f"Git repository at {WORKSPACE}/repo on branch main with {len(repo.get('commits', []))} commits:")
        lines += [f"  - {c['message'].splitlines()[0]}" for c in repo.get("commits", [])]
        if repo.get("worktree"):
            lines.append("  uncommitted changes in: " + ", ".join(sorted(repo["worktree"])))
    if options.get("site"):
        from agentworld.envs.mcp.servers import SITE_URL

        lines.append(f"Local web site at {SITE_URL}/ with pages: " + ", ".join(sorted(options["site"])))
    return "\n".join(lines)
