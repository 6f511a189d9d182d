"""``swe-v1``: a real Python repository with an injected bug, in a sandbox, behind coding tools.

``reset`` draws a repository (one of :data:`~agentworld.envs.swe.repos.REPOS`) and a
mutation from the seed, unpacks the source distribution into ``/workspace/<name>`` of a
fresh sandbox, applies the mutation and runs the repository's own tests there; a mutation
that no test notices is reverted and the next candidate is tried. The buggy tree is then
committed (fixed author and dates, so the commit hash is reproducible) and the episode
starts. ``step`` takes one JSON tool call (see ``tools.py``) and returns what the tool prints.

Every process in the sandbox runs on the episode's declared clock
(:mod:`agentworld.envs.clock`): it starts at the declared time when the episode starts and
advances a fixed tick per reading, so ``date`` and pytest's "passed in 0.05s" are the same
in every run and on every machine; the initial state declares it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentworld.envs.base import Env, Reset, Step
from agentworld.envs.clock import SHARED_COUNTER_ENV, SHARED_COUNTER_FILES, TICK_S, Clock, find_library
from agentworld.envs.sandbox import Limits, Sandbox, SandboxUnavailable
from agentworld.envs.sandbox.rootfs import ensure_rootfs
from agentworld.envs.swe import mutate, repos
from agentworld.envs.swe.editor import Editor, SandboxFiles, ToolError
from agentworld.envs.swe.tools import TOOLS, Bash, parse_action
from agentworld.records.trajectory import SimContext
from agentworld.seeding import keyed_rng

# pytest's short summary: "FAILED tests/test_x.py::test_y[param] - AssertionError: ..."
FAILED_RE = re.compile(r"^(?:FAILED|ERROR) (\S+?\.py(?:::.+?)?)(?: - .*)?$", re.M)


WHOSE_CLOCK = "The sandbox's"
"""How the initial state names the clock it declares."""


def _clock_env(clock: Clock) -> dict[str, str]:
    """What gives every sandbox process ``clock``: libfaketime from the sandbox's own root."""
    if clock.real:
        return {}
    root = ensure_rootfs(build=False)
    library = find_library(root)
    if library is None:
        raise SandboxUnavailable(f"the sandbox root {root} has no libfaketime, so it cannot get the declared clock",
                                 "rebuild it: `python -m agentworld.envs.sandbox.rootfs` (or opt into clock='real')")
    return {**clock.env(library), **SHARED_COUNTER_ENV}


class NoBugFound(RuntimeError):
    """No candidate mutation made a test fail within the attempt budget."""


@dataclass(frozen=True)
class Bug:
    """The injected bug of an episode and the tests that catch it."""

    repo: str
    mutation: mutate.Mutation
    failing_tests: tuple[str, ...]
    test_output: str
    attempts: int


@dataclass
class SweConfig:
    """Options of the SWE environment (also accepted per episode in ``reset(options=...)``)."""

    repos: tuple[str, ...] = tuple(repos.REPOS)
    """Repositories to draw from."""
    max_attempts: int = 12
    """Mutations tried (each one a test run) before giving up on a seed."""
    test_timeout: float = 60.0
    """Seconds one verification run of the suite may take (a mutation that hangs is skipped)."""
    bash_timeout: float = 120.0
    max_steps: int = 50
    cache: str | None = None
    """sdist cache folder (default: the user cache, see ``repos.cache_dir``)."""
    limits: Limits = field(default_factory=lambda: Limits(memory_mb=2048, pids=256, disk_mb=512))
    clock: str | None = None
    """When the sandbox's clock starts: an ISO 8601 time with a zone (default
    :data:`~agentworld.envs.clock.DEFAULT_START`), or ``"real"`` for a task that needs the
    host's clock (its durations then differ between runs)."""


class SweEnv(Env):
    domain = "swe"
    deterministic_reset = True

    def __init__(self, config: SweConfig | None = None, **overrides: Any):
        self.config = config or SweConfig(**overrides)
        self.sandbox: Sandbox | None = None
        self.bug: Bug | None = None
        self.spec: repos.RepoSpec | None = None
        self.editor: Editor | None = None
        self.bash: Bash | None = None
        self.steps = 0
        self._context: dict[str, Any] = {}

    # -- episode ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Reset:
        """Options: ``repo`` (name), ``mutation`` (a :attr:`Mutation.id` to force), ``bug``
        (False: no bug, the pristine tree), ``clock`` (see :attr:`SweConfig.clock`)."""
        self.close()
        self.bug = None
        options = options or {}
        seed = 0 if seed is None else seed
        rng = keyed_rng(seed, "swe")
        name = options.get("repo") or rng.choice(sorted(self.config.repos))
        if name not in repos.REPOS:
            raise KeyError(f"unknown repository {name!r} (known: {', '.join(repos.REPOS)})")
        spec = self.spec = repos.REPOS[name]
        clock = Clock.of(options.get("clock", self.config.clock), tick_s=TICK_S, monotonic=True)
        self.sandbox = Sandbox(limits=self.config.limits,
                               env={"PYTHONPATH": repos.guest_pythonpath(spec), **_clock_env(clock)})
        # No sandbox process has run yet, so writing the fresh tree from the host is safe.
        repo = repos.extract_repo(spec, self.sandbox.workspace, self.config.cache)
        self.sandbox.adopt(self.sandbox.workspace)  # host-written files belong to root inside
        self._start_clock(clock)
        top = sorted(p.name + ("/" if p.is_dir() else "") for p in repo.iterdir())
        if options.get("bug", True):
            candidates = mutate.repo_mutations(repo, spec.source_dirs, spec.exclude)
            originals = {m.file: (repo / m.file).read_text(encoding="utf-8") for m in candidates}
            self.bug = self._inject(spec, mutate.ordered(candidates, rng), originals, options.get("mutation"))
        self._git_init(spec)
        machine = self._versions()
        self._start_clock(clock)  # the episode's first command sees the declared start
        self.editor = Editor(SandboxFiles(self.sandbox), cwd=repos.GUEST_ROOT)
        self.bash = Bash(self.sandbox, cwd=repos.GUEST_ROOT, timeout=self.config.bash_timeout)
        self.steps = 0
        self._context = {
            "task_description": self._task(spec, self.bug),
            "tools": TOOLS,
            "initial_state": self._initial_state(spec, top, machine, clock),
        }
        info: dict[str, Any] = {"repo": spec.name, "version": spec.version}
        if self.bug is not None:
            info.update(bug=self.bug.mutation.description, failing_tests=list(self.bug.failing_tests),
                        attempts=self.bug.attempts)
        return Reset(self._context["task_description"], info)

    def step(self, action: str) -> Step:
        if self.sandbox is None or self.editor is None or self.bash is None:
            raise RuntimeError("call reset() before step()")
        self.steps += 1
        info: dict[str, Any] = {"step": self.steps}
        try:
            name, args = parse_action(action)
            info["tool"] = name
            if name == "bash":
                if not isinstance(args.get("command"), str):
                    raise ToolError("Parameter `command` is required for the bash tool.")
                obs, code = self.bash(args["command"])
                info["exit_code"] = code
            else:
                obs = self.editor(args)
        except (ValueError, ToolError) as exc:
            obs, info["error"] = f"ERROR:\n{exc}", True
        return Step(obs, 0.0, False, self.steps >= self.config.max_steps, info)

    def context(self) -> SimContext:
        return SimContext.of(self._context)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = self.editor = self.bash = None

    # -- setup helpers -------------------------------------------------------------------
    def run_tests(self, spec: repos.RepoSpec, extra: str = "-x -p no:cacheprovider") -> tuple[int, str]:
        """Run the repository's suite in the sandbox without leaving caches behind."""
        assert self.sandbox is not None
        res = self.sandbox.run(f"{spec.test_command} {extra}", cwd=spec.guest_path, timeout=self.config.test_timeout,
                               env={"PYTHONDONTWRITEBYTECODE": "1"})
        return (-1 if res.timed_out else res.exit_code), res.stdout + res.stderr

    def _inject(self, spec: repos.RepoSpec, order: list[mutate.Mutation], originals: dict[str, str],
                forced: str | None) -> Bug:
        assert self.sandbox is not None
        if forced:
            order = [m for m in order if m.id == forced]
            if not order:
                raise NoBugFound(f"mutation {forced!r} is not a candidate in {spec.name}")
        attempt = 0
        for m in order:
            mutated = mutate.apply_text(originals[m.file], m)
            if not mutate.parses(mutated):
                continue
            attempt += 1
            if attempt > self.config.max_attempts:
                break
            path = f"{spec.guest_path}/{m.file}"
            self.sandbox.write_file(path, mutated)
            code, output = self.run_tests(spec)
            if code == 1:  # pytest: tests ran and some failed (not a crash or a collection error)
                return Bug(spec.name, m, tuple(dict.fromkeys(FAILED_RE.findall(output))), output, attempt)
            self.sandbox.write_file(path, originals[m.file])
        raise NoBugFound(f"no mutation of {spec.name} made a test fail in {self.config.max_attempts} attempts")

    def _start_clock(self, clock: Clock) -> None:
        """(Re)start the sandbox's clock at its declared time: a fresh tick counter.

        The old counter is removed without libfaketime loaded (so nothing holds it), then one
        process under it makes the counter and ``exec``s, which leaves the counter behind for
        every later command (see :data:`~agentworld.envs.clock.SHARED_COUNTER_ENV`).
        """
        assert self.sandbox is not None
        if clock.real:
            return
        sem, shm = SHARED_COUNTER_FILES
        self.sandbox.run(["/bin/rm", "-f", sem, shm], cwd="/", env={"LD_PRELOAD": ""})
        res = self.sandbox.run(f"exec /bin/test -e {sem} -a -e {shm}", cwd="/")
        if not res.ok:
            raise RuntimeError(f"the sandbox's clock counter was not made ({sem}, {shm}): {res.stderr.strip()}")

    def _git_init(self, spec: repos.RepoSpec) -> None:
        assert self.sandbox is not None
        self.sandbox.write_file(f"{spec.guest_path}/.git/info/exclude", repos.GIT_EXCLUDES)
        res = self.sandbox.run(
            "git init -q -b main && git add -A && git commit -q -m 'Initial commit'",
            cwd=spec.guest_path, env=repos.GIT_ENV,
        )
        if not res.ok:
            raise RuntimeError(f"git init failed in the sandbox: {res.stderr.strip()}")

    @staticmethod
    def _task(spec: repos.RepoSpec, bug: Bug | None) -> str:
        if bug is None:  # an exploration episode on the pristine tree
            return (f"Get to know the repository at {spec.guest_path} ({spec.dist} {spec.version}): read its "
                    f"code and run its tests with `cd {spec.guest_path} && {spec.test_command}`.")
        shown = ", ".join(f"`{t}`" for t in bug.failing_tests[:3]) or "some tests"
        return (
            f"The repository at {spec.guest_path} ({spec.dist} {spec.version}) has a bug: its test suite "
            f"fails ({shown}). Find the cause in the library code, fix it with a minimal change and make "
            f"`cd {spec.guest_path} && {spec.test_command}` pass. Do not modify the tests."
        )

    def _versions(self) -> str:
        """What the machine itself says it is (so the state stays true if the root changes)."""
        assert self.sandbox is not None
        res = self.sandbox.run(". /etc/os-release; echo \"$PRETTY_NAME\"; python3 -V; git --version; "
                               "command -v python >/dev/null && echo python || echo no-python")
        os_name, py, git, has_python = (res.stdout.strip().splitlines() + ["", "", "", ""])[:4]
        python = "`python3` and `python`" if has_python == "python" else "`python3` (there is no `python`)"
        return f"{os_name} sandbox without network, working as root; {py} as {python}, {git}"

    @staticmethod
    def _initial_state(spec: repos.RepoSpec, top: list[str], machine: str, clock: Clock) -> str:
        pytest_version = next(w.split("==")[1] for w in repos.TEST_WHEELS if w.startswith("pytest=="))
        return (
            f"{machine}, GNU coreutils, grep, sed, find.\n"
            f"{spec.guest_path}: a git repository on branch main with one commit, 'Initial commit', "
            f"holding the source distribution of {spec.dist} {spec.version}. Top-level entries: "
            f"{', '.join(top)}.\n"
            f"pytest {pytest_version} is importable; PYTHONPATH={repos.guest_pythonpath(spec)}.\n"
            f"The suite runs with: cd {spec.guest_path} && {spec.test_command}\n"
            f"{clock.describe(WHOSE_CLOCK)}"
        )

