"""Real Python repositories for the SWE environment, taken from PyPI source distributions.

Each repository is a small pure-Python project whose sdist ships its own test suite and
whose tests run offline in a few seconds. The sdists (and the wheels of pytest that run
those suites inside the sandbox) are downloaded once at setup time into the user cache
(``python -m agentworld.envs.swe``, called by ``scripts/setup.sh``); at run time
nothing is downloaded, and a missing file fails with a hint naming that command.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from agentworld.envs._owner import OWNER_FILE, write_owner
from agentworld.envs.sweep import SWE_SITE_PREFIX

GUEST_ROOT = "/workspace"
"""Where the workspace appears inside the sandbox."""
DEPS_DIR = ".deps"
"""Hidden workspace folder holding pytest and its dependencies (on PYTHONPATH)."""

# Fixed identity and dates make the initial commit hash reproducible, so a replayed
# episode prints the same `git log` as the recorded one.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}
GIT_EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n*.egg-info/\n"


class MissingSourceError(RuntimeError):
    """A source distribution or wheel is not in the cache; the message says how to get it."""


@dataclass(frozen=True)
class RepoSpec:
    """One repository: which sdist, where its code and tests are, how to run the tests."""

    name: str
    """Short name, also the workspace folder (``/workspace/<name>``)."""
    dist: str
    """PyPI distribution name."""
    version: str
    source_dirs: tuple[str, ...]
    """Folders (or single files) holding the library code that bugs are injected into."""
    tests: str
    """The test folder or file, relative to the repository."""
    pytest_opts: str = ""
    """Options the suite needs offline (e.g. dropping coverage options of missing plugins)."""
    pythonpath: tuple[str, ...] = (".",)
    """Repository-relative folders that make the package importable (src layouts)."""
    exclude: tuple[str, ...] = field(default=("tests", "sandbox", "__main__.py"))
    """Path parts that are never mutated (tests, metadata, rarely tested code)."""

    @property
    def sdist_stem(self) -> str:
        return f"{self.dist.replace('-', '_')}-{self.version}"

    @property
    def guest_path(self) -> str:
        return f"{GUEST_ROOT}/{self.name}"

    def pytest(self, target: str | None = None) -> str:
        """The pytest command line for ``target`` (default: the whole suite)."""
        opts = f" {self.pytest_opts}" if self.pytest_opts else ""
        return f"python3 -m pytest -q{opts} {target or self.tests}"

    @property
    def test_command(self) -> str:
        return self.pytest()


REPOS: dict[str, RepoSpec] = {
    r.name: r
    for r in (
        RepoSpec("cachetools", "cachetools", "8.0.2", ("src/cachetools",), "tests", pythonpath=("src",)),
        RepoSpec("inflection", "inflection", "0.5.1", ("inflection",), "test_inflection.py"),
        RepoSpec("isodate", "isodate", "0.7.2", ("src/isodate",), "tests", pythonpath=("src",)),
        RepoSpec("parse", "parse", "1.22.4", ("parse",), "tests", '-o addopts=""'),
        RepoSpec("semver", "semver", "3.1.2", ("src/semver",), "tests", '-o addopts=""', ("src", "tests")),
        RepoSpec("toolz", "toolz", "1.2.0", ("toolz",), "toolz/tests"),
    )
}

# pytest and its runtime dependencies, pure-Python wheels unpacked into the workspace.
TEST_WHEELS = ("pytest==9.0.3", "pluggy==1.6.0", "iniconfig==2.3.0", "packaging==26.2", "pygments==2.20.0")


def cache_dir(root: str | Path | None = None) -> Path:
    """``$AGENTWORLD_SWE_CACHE`` or the user cache folder."""
    if root is not None:
        return Path(root)
    env = os.environ.get("AGENTWORLD_SWE_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("agentworld")) / "swe"


_HINT = "run `python -m agentworld.envs.swe` once with network access to PyPI (scripts/setup.sh does)"


def sdist_path(spec: RepoSpec, root: str | Path | None = None) -> Path:
    folder = cache_dir(root) / "sdists"
    for cand in (folder / f"{spec.sdist_stem}.tar.gz", folder / f"{spec.dist}-{spec.version}.tar.gz"):
        if cand.exists():
            return cand
    raise MissingSourceError(f"source distribution {spec.dist}=={spec.version} not found in {folder}; {_HINT}")


def test_site(root: str | Path | None = None) -> Path:
    """The unpacked test dependencies (built from the cached wheels on first use)."""
    base = cache_dir(root)
    site = base / "test-site"
    if (site / "pytest").is_dir():
        return site
    wheels = sorted((base / "wheels").glob("*.whl"))
    names = {w.name.split("-")[0].lower() for w in wheels}
    missing = [req for req in TEST_WHEELS if req.split("==")[0].lower() not in names]
    if missing:
        raise MissingSourceError(f"wheels {', '.join(missing)} not found in {base / 'wheels'}; {_HINT}")
    # Unpacked beside its final place, under an owner record: a run killed meanwhile leaves a
    # folder that sweeps remove (agentworld.envs.sweep), not one that lingers in the cache.
    tmp = Path(tempfile.mkdtemp(prefix=SWE_SITE_PREFIX, dir=base))
    write_owner(tmp)
    try:
        for whl in wheels:
            with zipfile.ZipFile(whl) as zf:
                zf.extractall(tmp)
        (tmp / OWNER_FILE).unlink()  # the site is copied into every workspace: no stray file there
        os.replace(tmp, site) if not site.exists() else shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return site


def download(root: str | Path | None = None, *, quiet: bool = True) -> Path:
    """Fetch every sdist and test wheel into the cache (setup time only). Idempotent."""
    base = cache_dir(root)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps"] + (["-q"] if quiet else [])
    todo = []
    for spec in REPOS.values():
        try:
            sdist_path(spec, base)
        except MissingSourceError:
            todo.append(f"{spec.dist}=={spec.version}")
    if todo:
        subprocess.run([*pip, "--no-binary", ":all:", "-d", str(base / "sdists"), *todo], check=True)
    have = {w.name.split("-")[0].lower() for w in (base / "wheels").glob("*.whl")}
    wheels = [req for req in TEST_WHEELS if req.split("==")[0].lower() not in have]
    if wheels:
        subprocess.run([*pip, "--only-binary", ":all:", "-d", str(base / "wheels"), *wheels], check=True)
    test_site(base)
    return base


def extract_repo(spec: RepoSpec, workspace: Path, root: str | Path | None = None) -> Path:
    """Unpack the sdist as ``workspace/<name>`` and the test dependencies as ``workspace/.deps``."""
    dest = workspace / spec.name
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(sdist_path(spec, root)) as tf:
        top = tf.getnames()[0].split("/")[0]
        tf.extractall(workspace, filter="data")
    (workspace / top).rename(dest)
    deps = workspace / DEPS_DIR
    if not deps.exists():
        shutil.copytree(test_site(root), deps)
    return dest


def guest_pythonpath(spec: RepoSpec) -> str:
    parts = [f"{GUEST_ROOT}/{DEPS_DIR}"] + [posixpath.normpath(f"{spec.guest_path}/{p}") for p in spec.pythonpath]
    return ":".join(parts)
