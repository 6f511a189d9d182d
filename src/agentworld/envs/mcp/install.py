"""Install the pinned Node MCP servers (and the fetch server's extractor) ahead of time.

``python -m agentworld.envs.mcp.install`` (run by ``scripts/setup.sh``) installs every
package in :data:`~agentworld.envs.mcp.servers.NPM_VERSIONS` at its exact version into
:func:`~agentworld.envs.mcp.servers.npm_dir`, and the JavaScript dependencies that the
fetch server's HTML extractor (readabilipy) would otherwise try to ``npm install`` the
first time it runs -- inside a sandbox with no network, and onto the MCP channel. After
this, episodes download nothing. Idempotent: installed pins are only checked.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

from agentworld.envs.mcp.servers import NPM_VERSIONS, npm_dir

# Versions of readabilipy's JavaScript dependencies, pinned (its package.json only gives minimums).
READABILITY_JS = {"@mozilla/readability": "0.6.0", "jsdom": "29.1.1", "minimist": "1.2.8"}


def _installed(folder: Path, package: str) -> str | None:
    manifest = folder / "node_modules" / package / "package.json"
    return json.loads(manifest.read_text()).get("version") if manifest.exists() else None


def _npm_install(folder: Path, pins: dict[str, str]) -> list[str]:
    todo = [f"{p}@{v}" for p, v in pins.items() if _installed(folder, p) != v]
    if todo:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--save-exact", "--loglevel=error",
                        "--prefix", str(folder), *todo], check=True, stdout=subprocess.DEVNULL)
    return todo


def main() -> int:
    if shutil.which("npm") is None:
        print("[mcp] npm not found: install nodejs and npm first", file=sys.stderr)
        return 1
    done = _npm_install(npm_dir(), NPM_VERSIONS)
    spec = importlib.util.find_spec("readabilipy")
    if spec and spec.origin:
        done += _npm_install(Path(spec.origin).parent / "javascript", READABILITY_JS)
    print(f"[mcp] node servers in {npm_dir()}: " + (f"installed {', '.join(done)}" if done else "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
