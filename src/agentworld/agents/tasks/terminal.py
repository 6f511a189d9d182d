"""Terminal tasks with goal checks (``terminal-v1`` for real, ``sim-v1`` simulated).

Each family draws names and content from the seed, starts from files under /workspace
(and a setup script where it needs a git history), and says in ``checks`` what must hold
at the end. The real grade runs every check as a command in the episode's sandbox; the
simulated grade reads the ledger (see :mod:`.terminal_checks`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from agentworld.agents.tasks.base import AgentTask, CheckResult, FamilyRegistry, Grade, JudgeFn, TaskContext, unwrap
from agentworld.agents.tasks.terminal_checks import Check, CommandCheck, FileCheck, _typed, judge_check, ledger_decides
from agentworld.envs.base import Env
from agentworld.envs.terminal.task import TerminalTask, cmd
from agentworld.records.trajectory import Trajectory
from agentworld.sim.scenario import Scenario

WS = "/workspace"
PROMPT = "root@sandbox:/workspace# "
FAMILIES = FamilyRegistry()

_WORDS = ["amber", "birch", "cobalt", "dune", "ember", "fjord", "granite", "heron", "iris", "jasper", "kelp",
          "lumen", "maple", "nova", "onyx", "pine", "quill", "reef", "sage", "tundra"]
_NAMES = ["Ada", "Boris", "Chidi", "Dalia", "Emil", "Fatima", "Gus", "Hiro", "Ines", "Jonas", "Kira", "Luis"]


@dataclass
class TerminalAgentTask(AgentTask):
    domain: str = "terminal"
    files: dict[str, str] = field(default_factory=dict)
    """Starting files (paths relative to /workspace)."""
    setup: str = ""
    checks: list[Check] = field(default_factory=list)

    def terminal_task(self) -> TerminalTask:
        return TerminalTask(name=self.family, description=self.instruction, files=dict(self.files),
                            setup=self.setup, actions=list(self.solution), category="agent")

    def scenario(self) -> Scenario:
        listing = "\n".join(f"  {p} ({len(c.encode())} bytes)" for p, c in sorted(self.files.items())) or "  (empty)"
        shown = "".join(f"--- {p} ---\n{c}" for p, c in sorted(self.files.items()) if len(c) < 2048)
        state = ("OS: Debian GNU/Linux 12 (bookworm)\nUser: root (uid 0), home /root\nNetwork: none (loopback only)\n"
                 f"Working directory: {WS}\nPrompt: root@sandbox:{WS}#\nFiles in {WS}:\n{listing}\n{shown}")
        if self.setup:
            state += f"\nPrepared by this setup script before the session:\n{self.setup}"
        return Scenario(id=self.id, domain="terminal", task=self.instruction, initial_state=state.strip(),
                        first_observation=PROMPT, max_turns=self.max_turns)

    def seed_ledger(self, ledger: Any) -> None:
        """The simulator's ledger starts out knowing the task's files (the real env writes them)."""
        ledger.cwd = ledger.cwd or WS
        for rel, content in self.files.items():
            ledger.files[f"{WS}/{rel}"] = content

    def grade(self, env: Env, trajectory: Trajectory, *, judge: JudgeFn | None = None) -> Grade:
        inner = unwrap(env)
        sandbox = getattr(inner, "sandbox", None)
        if sandbox is not None:
            return Grade(tuple(self._real(c, sandbox) for c in self.checks))
        ledger = getattr(inner, "ledger", None)
        if ledger is None:
            raise TypeError(f"cannot grade a terminal task in {type(inner).__name__}: neither a sandbox nor a ledger")
        typed = _typed(trajectory)
        out = []
        for c in self.checks:
            verdict = ledger_decides(c, ledger, trajectory, typed) if isinstance(c, FileCheck) else None
            out.append(CheckResult(c.name, verdict, "ledger", c.weight) if verdict is not None
                       else judge_check(c, trajectory, typed, judge))
        return Grade(tuple(out))

    @staticmethod
    def _real(c: Check, sandbox: Any) -> CheckResult:
        if isinstance(c, FileCheck):
            res = sandbox.run(c.shell(), timeout=20)
            return CheckResult(c.name, res.ok and c.on_output(res.stdout), "sandbox", c.weight)
        res = sandbox.run(c.probe, timeout=20)
        return CheckResult(c.name, res.ok and res.stdout.strip() == c.expect, "sandbox", c.weight,
                           detail="" if res.ok else f"exit {res.exit_code}")


def _task(family: str, seed: int, instruction: str, *, files: dict[str, str] | None = None, checks: list[Check],
          solution: list[str], setup: str = "", max_turns: int = 10) -> TerminalAgentTask:
    t = TerminalAgentTask(family=family, seed=seed, instruction=instruction, env_id="terminal-v1",
                          files=files or {}, setup=setup, checks=checks, solution=solution, max_turns=max_turns)
    t.reset_options = {"task": t.terminal_task()}
    return t


def _f(path: str) -> str:
    return f"{WS}/{path}"


@FAMILIES.add("term-write-file", "terminal")
def _write_file(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    name, word = rng.choice(_NAMES), rng.choice(_WORDS)
    out = f"{word}.txt"
    text = f"Hello, {name}"
    return _task("term-write-file", seed, f"Create the file {WS}/{out} containing exactly the line: {text}",
                 checks=[FileCheck(_f(out), "equals", text)], solution=[cmd(f"echo '{text}' > {out}")])


@FAMILIES.add("term-append-line", "terminal")
def _append_line(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    log = f"{rng.choice(_WORDS)}.log"
    lines = [f"event {w} ok" for w in rng.sample(_WORDS, 3)]
    new = f"event {rng.choice(_WORDS)}-{rng.randint(10, 99)} done"
    return _task("term-append-line", seed, f"Append the line '{new}' to the end of {log}, keeping its other lines.",
                 files={log: "\n".join(lines) + "\n"},
                 checks=[FileCheck(_f(log), "contains", new), FileCheck(_f(log), "contains", lines[0])],
                 solution=[cmd(f"echo '{new}' >> {log}")])


@FAMILIES.add("term-make-dirs", "terminal")
def _make_dirs(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    proj = rng.choice(_WORDS)
    subs = rng.sample(["src", "tests", "docs", "data", "scripts", "build"], 3)
    return _task("term-make-dirs", seed, f"Create a project folder {proj} in {WS} with the subfolders "
                 + ", ".join(subs) + ".", checks=[FileCheck(_f(f"{proj}/{s}"), "dir") for s in subs],
                 solution=[cmd(f"mkdir -p {proj}/{s}") for s in subs])


@FAMILIES.add("term-delete-logs", "terminal")
def _delete_logs(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    logs = [f"{w}.log" for w in rng.sample(_WORDS, 3)]
    keep = f"{rng.choice(_WORDS)}-notes.txt"
    files = {**{p: f"log line {i}\n" for i, p in enumerate(logs)}, keep: "keep me\n"}
    return _task("term-delete-logs", seed, f"Delete every .log file in {WS} but keep {keep}.", files=files,
                 checks=[*(FileCheck(_f(p), "absent") for p in logs), FileCheck(_f(keep), "contains", "keep me")],
                 solution=[cmd("rm " + " ".join(logs))])


@FAMILIES.add("term-rename-file", "terminal")
def _rename(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    a, b = rng.sample(_WORDS, 2)
    body = f"draft by {rng.choice(_NAMES)}\n"
    return _task("term-rename-file", seed, f"Rename {a}-draft.txt to {b}-final.txt.", files={f"{a}-draft.txt": body},
                 checks=[FileCheck(_f(f"{b}-final.txt"), "equals", body), FileCheck(_f(f"{a}-draft.txt"), "absent")],
                 solution=[cmd(f"mv {a}-draft.txt {b}-final.txt")])


@FAMILIES.add("term-backup-config", "terminal")
def _backup(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    conf = f"{rng.choice(_WORDS)}.ini"
    body = f"[server]\nport = {rng.randint(1024, 9999)}\nhost = {rng.choice(_WORDS)}.local\n"
    return _task("term-backup-config", seed, f"Make a backup copy of {conf} named {conf}.bak next to it.",
                 files={conf: body},
                 checks=[FileCheck(_f(f"{conf}.bak"), "equals", body), FileCheck(_f(conf), "equals", body)],
                 solution=[cmd(f"cp {conf} {conf}.bak")])


@FAMILIES.add("term-count-rows", "terminal")
def _count_rows(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    n = rng.randint(3, 9)
    rows = ["name,score"] + [f"{rng.choice(_NAMES)},{rng.randint(1, 100)}" for _ in range(n)]
    return _task("term-count-rows", seed, "Write the number of data rows (not counting the header) of scores.csv "
                 "into count.txt (just the number).", files={"scores.csv": "\n".join(rows) + "\n"},
                 checks=[FileCheck(_f("count.txt"), "equals", str(n))],
                 solution=[cmd("tail -n +2 scores.csv | wc -l > count.txt")])


@FAMILIES.add("term-replace-word", "terminal")
def _replace(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    old, new = rng.sample(_WORDS, 2)
    text = "".join(f"line {i}: the {old} is {rng.choice(['ready', 'late', 'blue'])}\n" for i in range(3))
    return _task("term-replace-word", seed, f"In notes.txt replace every '{old}' with '{new}'.", files={"notes.txt": text},
                 checks=[FileCheck(_f("notes.txt"), "contains", f"the {new} is"), FileCheck(_f("notes.txt"), "lacks", old)],
                 solution=[cmd(f"sed -i 's/{old}/{new}/g' notes.txt")])


@FAMILIES.add("term-sort-names", "terminal")
def _sort(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    names = rng.sample(_NAMES, 5)
    return _task("term-sort-names", seed, "Write the names of names.txt in alphabetical order into sorted.txt.",
                 files={"names.txt": "\n".join(names) + "\n"},
                 checks=[FileCheck(_f("sorted.txt"), "equals", "\n".join(sorted(names)))],
                 solution=[cmd("sort names.txt > sorted.txt")])


@FAMILIES.add("term-top-scorer", "terminal")
def _top(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    people = rng.sample(_NAMES, 4)
    scores = rng.sample(range(10, 99), 4)
    best = people[scores.index(max(scores))]
    rows = "name,score\n" + "".join(f"{p},{s}\n" for p, s in zip(people, scores, strict=True))
    return _task("term-top-scorer", seed, "Find the person with the highest score in results.csv and write their name "
                 "into winner.txt.", files={"results.csv": rows},
                 checks=[FileCheck(_f("winner.txt"), "equals", best)],
                 solution=[cmd("tail -n +2 results.csv | sort -t, -k2 -n -r | head -n1 | cut -d, -f1 > winner.txt")])


@FAMILIES.add("term-json-value", "terminal")
def _json_value(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    port = rng.randint(2000, 9000)
    conf = f'{{"name": "{rng.choice(_WORDS)}", "port": {port}, "debug": false}}\n'
    return _task("term-json-value", seed, "Write the value of the \"port\" key of config.json into port.txt.",
                 files={"config.json": conf}, checks=[FileCheck(_f("port.txt"), "equals", str(port))],
                 solution=[cmd("jq .port config.json > port.txt")])


@FAMILIES.add("term-script", "terminal")
def _script(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    word = f"{rng.choice(_WORDS)}-{rng.randint(1, 99)}"
    return _task("term-script", seed, f"Create an executable shell script run.sh that prints {word}.",
                 checks=[FileCheck(_f("run.sh"), "executable"), FileCheck(_f("run.sh"), "contains", word),
                         CommandCheck("./run.sh", word, "run.sh prints the word")],
                 solution=[cmd(f"printf '#!/bin/sh\\necho {word}\\n' > run.sh"), cmd("chmod +x run.sh")])


@FAMILIES.add("term-git-commit", "terminal")
def _git_commit(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    w = rng.choice(_WORDS)
    msg = f"Add {w} module"
    setup = ("git init -q -b main repo && cd repo && git config user.email dev@example.com && "
             "git config user.name dev && echo '# demo' > README.md && git add . && git commit -qm init && "
             f"echo 'def {w}(): return 1' > {w}.py")
    return _task("term-git-commit", seed, f"In the git repository {WS}/repo, commit the new file {w}.py with the "
                 f"message '{msg}'.", setup=setup,
                 checks=[CommandCheck("git -C repo log -1 --format=%s", msg, "last commit message"),
                         CommandCheck("git -C repo status --porcelain | wc -l", "0", "clean working tree")],
                 solution=[cmd(f"cd repo && git add {w}.py && git commit -qm '{msg}'")])


@FAMILIES.add("term-env-profile", "terminal")
def _env_profile(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    var, val = f"{rng.choice(_WORDS).upper()}_HOME", f"/opt/{rng.choice(_WORDS)}"
    line = f"export {var}={val}"
    return _task("term-env-profile", seed, f"Make the environment variable {var}={val} permanent for new shells by "
                 "adding an export line to /root/.bashrc.",
                 checks=[FileCheck("/root/.bashrc", "contains", line)],
                 solution=[cmd(f"echo '{line}' >> /root/.bashrc")])
