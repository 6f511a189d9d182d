"""Scripted repair episodes: how a careful engineer fixes the injected bug.

Run the tests, read the failure, look around, find and inspect the function, fix it with a
one-line ``str_replace``, re-run the failing test and the suite, review the diff. A seeded
choice adds the detours real agents take (a reproduction script, a mistaken edit that the
tool rejects, a throw-away edit undone, a view past the end of the file), so the recorded
observations cover the tools' error messages as well as their normal output.
"""

from __future__ import annotations

import json
import random
import shlex
from collections.abc import Iterator

from agentworld.envs.record import record_episode
from agentworld.envs.swe.env import SweEnv
from agentworld.envs.swe.mutate import Mutation
from agentworld.envs.swe.tools import tool_call
from agentworld.records.trajectory import Provenance, Trajectory
from agentworld.seeding import keyed_rng


def repair_actions(env: SweEnv, seed: int) -> Iterator[str]:
    """Actions for the episode ``env`` was just reset into (read lazily, after the reset)."""
    spec, bug = env.spec, env.bug
    if spec is None or bug is None or env.sandbox is None:
        raise RuntimeError("reset the environment before asking for its repair actions")
    rng = keyed_rng(seed, "swe-script")
    m = bug.mutation
    repo = spec.guest_path
    path = f"{repo}/{m.file}"
    failing = bug.failing_tests[0] if bug.failing_tests else None
    # Node ids go through the shell quoted (parametrized ids hold brackets, spaces, %...).
    node = shlex.quote(failing) if failing else None
    text = env.sandbox.read_file(path)
    lines = text.split("\n")

    # 1. Look around.
    look = rng.choice(["view", "ls", "git"])
    if look == "view":
        yield tool_call("str_replace_editor", command="view", path=repo)
    elif look == "ls":
        yield tool_call("bash", command=f"cd {repo} && ls -la")
    else:
        yield tool_call("bash", command=f"cd {repo} && git log --oneline -n 3 && git status")

    # 2. Run the tests and read the failure.
    if rng.random() < 0.5 or failing is None:
        yield tool_call("bash", command=f"cd {repo} && {spec.pytest()} -x 2>&1 | tail -n 40")
    else:
        yield tool_call("bash", command=f"cd {repo} && {spec.pytest(node)} 2>&1 | tail -n 50")
    if failing and rng.random() < 0.5:
        test_file, _, test_name = failing.partition("::")
        func = test_name.split("::")[-1].split("[")[0]  # parametrized ids carry [params]
        yield tool_call("bash", command=f"grep -n -A 12 'def {func}' {test_file}")

    # 3. Optionally write a reproduction script first.
    repro = failing is not None and rng.random() < 0.3
    if repro:
        stable = failing if "[" not in failing else failing.split("::")[0]  # ids may change with the fix
        args = ", ".join(json.dumps(a) for a in ["-q", *shlex.split(spec.pytest_opts), stable])
        script = f"import sys\n\nimport pytest\n\nsys.exit(pytest.main([{args}]))\n"
        yield tool_call("str_replace_editor", command="create", path=f"{repo}/reproduce_bug.py", file_text=script)
        yield tool_call("bash", command="python3 reproduce_bug.py 2>&1 | tail -n 15")

    # 4. Find and read the function.
    src_dir = spec.source_dirs[0]
    yield tool_call("bash", command=f"grep -rn 'def {m.function}' {src_dir}")
    lo, hi = m.function_start, m.function_end
    if hi - lo > 40:
        lo, hi = max(lo, m.line - 15), min(hi, m.line + 15)
    if rng.random() < 0.15:
        bad = len(lines) + rng.randint(5, 50)
        yield tool_call("str_replace_editor", command="view", path=path, view_range=[lo, bad])
    yield tool_call("str_replace_editor", command="view", path=path, view_range=[max(1, lo), hi])

    # 5. Fix it, sometimes after a rejected or undone attempt.
    yield from _fix_actions(rng, path, lines, m)

    # 6. Verify and review.
    if repro:
        yield tool_call("bash", command=f"cd {repo} && python3 reproduce_bug.py 2>&1 | tail -n 5 && rm reproduce_bug.py")
    elif failing:
        # A parametrized id can change with the fix (ids derived from values): re-run its file.
        target = node if "[" not in failing else failing.split("::")[0]
        yield tool_call("bash", command=f"cd {repo} && {spec.pytest(target)}")
    yield tool_call("bash", command=f"cd {repo} && {spec.pytest()} 2>&1 | tail -n 3")
    if rng.random() < 0.7:
        yield tool_call("bash", command=f"cd {repo} && git diff")
    if rng.random() < 0.3:
        yield tool_call("bash", command=f"cd {repo} && git status --short")


def _fix_actions(rng: random.Random, path: str, lines: list[str], m: Mutation) -> Iterator[str]:
    """The one-line fix, after a seeded detour: an edit the tool rejects (no match, or
    several), or a throw-away edit undone -- so the tools' error output is recorded too."""
    detour = rng.random()
    if detour < 0.2:
        yield tool_call("str_replace_editor", command="str_replace", path=path,
                        old_str=m.mutated_line.strip() + "  ", new_str=m.original_line.strip())
    elif detour < 0.35:
        common = _repeated_snippet(lines)
        if common:
            yield tool_call("str_replace_editor", command="str_replace", path=path, old_str=common, new_str=common + " ")
    elif detour < 0.5:
        indent = m.original_line[: len(m.original_line) - len(m.original_line.lstrip())]
        yield tool_call("str_replace_editor", command="insert", path=path, insert_line=m.line - 1,
                        new_str=f"{indent}# FIXME: check this line")
        yield tool_call("str_replace_editor", command="undo_edit", path=path)
    old, new = _unique_edit(lines, m.line, m.original_line)
    yield tool_call("str_replace_editor", command="str_replace", path=path, old_str=old, new_str=new)


def _unique_edit(lines: list[str], line: int, original: str) -> tuple[str, str]:
    """``(old, new)``: the mutated line widened with neighbours until it occurs once in the file."""
    text = "\n".join(lines)
    lo = hi = line - 1
    while text.count("\n".join(lines[lo:hi + 1])) > 1 and (lo > 0 or hi < len(lines) - 1):
        if lo > 0:
            lo -= 1
        else:
            hi += 1
    block = lines[lo:hi + 1]
    fixed = [original if i == line - 1 - lo else ln for i, ln in enumerate(block)]
    return "\n".join(block), "\n".join(fixed)


def _repeated_snippet(lines: list[str]) -> str | None:
    """A non-blank line that occurs several times: a typical too-short ``old_str``."""
    seen: dict[str, int] = {}
    for ln in lines:
        s = ln.strip()
        if len(s) > 8:
            seen[s] = seen.get(s, 0) + 1
    repeated = sorted(s for s, n in seen.items() if n > 1)
    return repeated[0] if repeated else None


def scripted_repair(env: SweEnv, *, seed: int, trajectory_id: str, options: dict | None = None) -> Trajectory:
    """Record one scripted repair episode in ``env`` (reset with ``seed``)."""
    traj = record_episode(
        env, _lazy(env, seed), trajectory_id=trajectory_id, seed=seed, options=options,
        provenance=Provenance(source="real", environment="swe-v1", agent="scripted", seed=seed),
    )
    assert env.bug is not None
    traj.provenance.task = f"repair:{env.bug.repo}:{env.bug.mutation.kind}"
    # The injected bug travels with the trajectory for audits and replays.
    traj.bug = {"repo": env.bug.repo, "mutation": env.bug.mutation.id, "failing_tests": list(env.bug.failing_tests)}
    return traj


def _lazy(env: SweEnv, seed: int) -> Iterator[str]:
    # record_episode resets first; the generator body runs only when iteration starts.
    yield from repair_actions(env, seed)
