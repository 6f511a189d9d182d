"""Per-episode workspaces: the files, git repository and local site that servers work on.

A workspace is described by JSON-able options (recorded with the trajectory), so the
same episode can be rebuilt and replayed byte for byte:

- ``files``: ``{relative path: text}`` under ``files/`` (the filesystem server's root);
- ``site``: ``{relative path: html}`` under ``site/`` (served to the fetch server);
- ``repo``: ``{"commits": [{"message", "files"}], "worktree": {path: text}}`` -- a git
  repository under ``repo/`` built with real git, commits first, then uncommitted edits.
"""

from __future__ import annotations

import os
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


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"workspace path must be relative and stay inside: {rel!r}")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        # The repository was written by git inside the sandbox: never follow a link it made.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)


# Replays the staged commits in one sandboxed run (one launch instead of two per commit).
# Git runs confined even here: the files and messages come from task options, and a
# planted .git/config (core.fsmonitor, say) must not run anything on the host.
_BUILD_REPO = """set -e
cd {ws}/repo
git init -q -b main
for c in {ws}/{stage}/*/; do
  [ -d "$c" ] || continue
  cp -R "$c/tree/." .
  git add -A
  git commit -q -F "$c/message"
done
"""
_STAGE = ".commits"


def _build_repo(workspace: Path, commits: list[dict[str, Any]]) -> None:
    stage = workspace / _STAGE
    for i, commit in enumerate(commits):
        folder = stage / f"{i:06d}"
        (folder / "tree").mkdir(parents=True)
        _write_tree(folder / "tree", commit.get("files") or {})
        (folder / "message").write_text(commit["message"], encoding="utf-8")
    hand_over(workspace)
    script = _BUILD_REPO.format(ws=WORKSPACE, stage=_STAGE)
    spec = ServerSpec("git-setup", "", ("/bin/sh", "-c", script), env=dict(GIT_ENV, HOME=WORKSPACE))
    try:
        proc = subprocess.run(confined_argv(spec, workspace, Limits(cpu_s=30)), env=server_env(spec),
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the workspace's git repository failed: {proc.stderr.strip()}")


def build_workspace(workspace: Path, options: dict[str, Any]) -> None:
    """Create ``workspace`` with the content ``options`` describe, owned by the servers' user."""
    for sub in ("files", "site", "repo"):
        (workspace / sub).mkdir(parents=True, exist_ok=True)
    _write_tree(workspace / "files", options.get("files") or {})
    _write_tree(workspace / "site", options.get("site") or {})
    repo = options.get("repo")
    if repo:
        _build_repo(workspace, repo.get("commits", []))
        _write_tree(workspace / "repo", repo.get("worktree") or {})
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
