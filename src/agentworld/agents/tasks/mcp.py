"""MCP tasks with end-state checks on files, the memory graph and git (``mcp-v1``).

The real grade reads the end state from the live servers (:mod:`.mcp_state`); the
simulated grade replays the calls the simulator accepted. The simulator is given the
same servers' tool schemas (recorded from the real servers, ``mcp_tools.json``).
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentworld.agents.tasks.base import AgentTask, CheckResult, FamilyRegistry, Grade, JudgeFn, TaskContext, unwrap
from agentworld.agents.tasks.mcp_state import FILES, REPO, EndState, initial_state, read_real, replay
from agentworld.envs.base import Env
from agentworld.envs.mcp.workspace import describe_workspace
from agentworld.records.trajectory import Trajectory
from agentworld.sim.scenario import Scenario

FAMILIES = FamilyRegistry()
_WORDS = ["apple", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper", "lantern",
          "meadow", "orchid", "pepper", "quartz", "raven", "timber", "willow", "zephyr"]
_PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Kofi", "Lena", "Omar"]

Kind = Literal["file_equals", "file_contains", "file_lacks", "file_absent", "dir", "entity", "observation",
               "relation", "commit", "clean", "branch"]


@functools.cache
def tool_schemas() -> dict[str, list[dict[str, Any]]]:
    """Server name -> its ``tools/list`` schemas, as recorded from the real servers."""
    return json.loads((Path(__file__).parent / "mcp_tools.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class McpCheck:
    kind: Kind
    target: str
    value: str = ""
    weight: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.kind} {self.target}" + (f" {self.value!r}" if self.value else "")

    def holds(self, st: EndState) -> bool:  # noqa: C901 - one line per kind
        content = st.files.get(self.target)
        k = self.kind
        if k == "file_equals":
            return content is not None and content.strip() == self.value.strip()
        if k == "file_contains":
            return content is not None and self.value in content
        if k == "file_lacks":
            return content is not None and self.value not in content
        if k == "file_absent":
            return content is None
        if k == "dir":
            return self.target.rstrip("/") in st.dirs
        if k == "entity":
            return self.target in st.entities and st.entities[self.target].get("entityType") == self.value
        if k == "observation":
            return self.value in st.entities.get(self.target, {}).get("observations", [])
        if k == "relation":
            frm, rel, to = self.target.split("|")
            return (frm, rel, to) in st.relations
        if k == "commit":
            return bool(st.commits) and st.commits[0] == self.value
        if k == "clean":
            return not st.dirty
        return self.target in st.branches  # branch


@dataclass
class McpAgentTask(AgentTask):
    domain: str = "mcp"
    servers: list[str] = field(default_factory=list)
    checks: list[McpCheck] = field(default_factory=list)

    def scenario(self) -> Scenario:
        tools = [t for s in self.servers for t in tool_schemas()[s]]
        state = f"MCP servers: {', '.join(self.servers)}.\n{describe_workspace(self.reset_options)}"
        return Scenario(id=self.id, domain="mcp", task=self.instruction, tools=tools, initial_state=state,
                        first_observation=state, max_turns=self.max_turns)

    def grade(self, env: Env, trajectory: Trajectory, *, judge: JudgeFn | None = None) -> Grade:
        inner = unwrap(env)
        hub = getattr(inner, "_hub", None)
        if hub is not None:
            kinds = {c.kind for c in self.checks}
            st = read_real(hub, paths=[c.target for c in self.checks if c.kind.startswith("file_")],
                           dirs=[c.target for c in self.checks if c.kind == "dir"],
                           graph=bool(kinds & {"entity", "observation", "relation"}),
                           git=bool(kinds & {"commit", "clean", "branch"}))
            decider = "mcp"
        else:
            st = replay(initial_state(self.reset_options), [(t.action, t.observation) for t in trajectory.turns])
            decider = "replay"
        return Grade(tuple(CheckResult(c.name, c.holds(st), decider, c.weight) for c in self.checks))  # type: ignore[arg-type]


def _call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _task(family: str, seed: int, instruction: str, servers: list[str], options: dict[str, Any],
          checks: list[McpCheck], solution: list[str]) -> McpAgentTask:
    return McpAgentTask(family=family, seed=seed, instruction=instruction, env_id="mcp-v1",
                        reset_options={"servers": servers, **options, "task": instruction}, servers=servers,
                        checks=checks, solution=solution)


@FAMILIES.add("mcp-fs-write", "mcp")
def _fs_write(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    w, who = rng.choice(_WORDS), rng.choice(_PEOPLE)
    path, text = f"{FILES}/reports/{w}.txt", f"Owner: {who}"
    return _task("mcp-fs-write", seed, f"Create {path} containing exactly: {text}", ["filesystem"],
                 {"files": {"reports/index.txt": "reports\n"}}, [McpCheck("file_equals", path, text)],
                 [_call("write_file", path=path, content=text)])


@FAMILIES.add("mcp-fs-edit", "mcp")
def _fs_edit(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    proj, new = rng.choice(_WORDS), rng.choice(["review", "final", "blocked"])
    path = f"{FILES}/{proj}/README.txt"
    return _task("mcp-fs-edit", seed, f"Change the status line of {path} from draft to {new}.", ["filesystem"],
                 {"files": {f"{proj}/README.txt": f"Project {proj}\nStatus: draft\n"}},
                 [McpCheck("file_contains", path, f"Status: {new}"), McpCheck("file_lacks", path, "Status: draft"),
                  McpCheck("file_contains", path, f"Project {proj}")],
                 [_call("edit_file", path=path, edits=[{"oldText": "Status: draft", "newText": f"Status: {new}"}])])


@FAMILIES.add("mcp-fs-move", "mcp")
def _fs_move(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    proj = rng.choice(_WORDS)
    body = "".join(f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} event {w}\n" for w in rng.sample(_WORDS, 3))
    src, dst = f"{FILES}/archive/old.log", f"{FILES}/{proj}/old.log"
    return _task("mcp-fs-move", seed, f"Move {src} into the {proj} folder ({dst}).", ["filesystem"],
                 {"files": {"archive/old.log": body, f"{proj}/notes.md": "# notes\n"}},
                 [McpCheck("file_equals", dst, body), McpCheck("file_absent", src)],
                 [_call("move_file", source=src, destination=dst)])


@FAMILIES.add("mcp-fs-mkdir", "mcp")
def _fs_mkdir(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    proj = rng.choice(_WORDS)
    subs = rng.sample(["src", "docs", "out", "data"], 2)
    paths = [f"{FILES}/{proj}/{s}" for s in subs]
    return _task("mcp-fs-mkdir", seed, f"Create the directories {' and '.join(paths)}.", ["filesystem"],
                 {"files": {"README.txt": "workspace\n"}}, [McpCheck("dir", p) for p in paths],
                 [_call("create_directory", path=p) for p in paths])


@FAMILIES.add("mcp-fs-total", "mcp")
def _fs_total(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    qty = [rng.randint(1, 30) for _ in range(rng.randint(3, 5))]
    csv = "item,qty\n" + "".join(f"{w},{q}\n" for w, q in zip(rng.sample(_WORDS, len(qty)), qty, strict=True))
    out = f"{FILES}/total.txt"
    return _task("mcp-fs-total", seed, f"Read {FILES}/stock.csv and write the sum of the qty column to {out} "
                 "(just the number).", ["filesystem"], {"files": {"stock.csv": csv}},
                 [McpCheck("file_equals", out, str(sum(qty)))],
                 [_call("read_text_file", path=f"{FILES}/stock.csv"), _call("write_file", path=out, content=str(sum(qty)))])


@FAMILIES.add("mcp-mem-entities", "mcp")
def _mem_entities(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    people = rng.sample(_PEOPLE, 2)
    return _task("mcp-mem-entities", seed, f"Record {people[0]} and {people[1]} in the knowledge graph as entities "
                 "of type person.", ["memory"], {}, [McpCheck("entity", p, "person") for p in people],
                 [_call("create_entities", entities=[{"name": p, "entityType": "person", "observations": []}
                                                     for p in people])])


@FAMILIES.add("mcp-mem-relation", "mcp")
def _mem_relation(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    a, b = rng.sample(_PEOPLE, 2)
    rel = rng.choice(["mentors", "works_with", "reports_to"])
    return _task("mcp-mem-relation", seed, f"In the knowledge graph, create the person entities {a} and {b} and the "
                 f"relation {a} {rel} {b} (relation type '{rel}').", ["memory"], {},
                 [McpCheck("entity", a, "person"), McpCheck("entity", b, "person"), McpCheck("relation", f"{a}|{rel}|{b}")],
                 [_call("create_entities", entities=[{"name": p, "entityType": "person", "observations": []} for p in (a, b)]),
                  _call("create_relations", relations=[{"from": a, "to": b, "relationType": rel}])])


@FAMILIES.add("mcp-mem-observe", "mcp")
def _mem_observe(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    proj, who = rng.choice(_WORDS), rng.choice(_PEOPLE)
    fact = f"owned by {who}"
    return _task("mcp-mem-observe", seed, f"Create a project entity named {proj} in the knowledge graph and add "
                 f"the observation '{fact}' to it.", ["memory"], {},
                 [McpCheck("entity", proj, "project"), McpCheck("observation", proj, fact)],
                 [_call("create_entities", entities=[{"name": proj, "entityType": "project", "observations": []}]),
                  _call("add_observations", observations=[{"entityName": proj, "contents": [fact]}])])


def _repo(rng: random.Random) -> tuple[str, dict[str, Any]]:
    mod = rng.choice(_WORDS)
    commits = [{"message": "Initial commit", "files": {"README.md": f"# {mod}\n", f"{mod}.py": "def main():\n    return 0\n"}}]
    return mod, {"commits": commits}


@FAMILIES.add("mcp-git-commit", "mcp")
def _git_commit(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    mod, repo = _repo(rng)
    helper = rng.choice(_WORDS)
    repo["worktree"] = {f"{helper}.py": f"def {helper}():\n    return {helper!r}\n"}
    msg = f"Add {helper} helper"
    return _task("mcp-git-commit", seed, f"In the repository {REPO}, commit the new file {helper}.py with the "
                 f"message '{msg}'.", ["git"], {"repo": repo},
                 [McpCheck("commit", "HEAD", msg), McpCheck("clean", REPO)],
                 [_call("git_add", repo_path=REPO, files=[f"{helper}.py"]), _call("git_commit", repo_path=REPO, message=msg)])


@FAMILIES.add("mcp-git-branch", "mcp")
def _git_branch(rng: random.Random, seed: int, ctx: TaskContext) -> AgentTask:
    mod, repo = _repo(rng)
    branch = f"feature/{rng.choice(_WORDS)}-{rng.randint(1, 99)}"
    return _task("mcp-git-branch", seed, f"In the repository {REPO}, create a branch named {branch}.", ["git"],
                 {"repo": repo}, [McpCheck("branch", branch), McpCheck("commit", "HEAD", "Initial commit")],
                 [_call("git_create_branch", repo_path=REPO, branch_name=branch)])
