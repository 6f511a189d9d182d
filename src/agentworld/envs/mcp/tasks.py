"""Seeded MCP task generators with scripted policies.

Each template draws its content (file names, notes, commits, entities, time zones,
pages) from a keyed RNG, so a seed always gives the same episode. Scripts include the
mistakes agents make -- wrong paths, missing arguments, unknown revisions, pages that
robots.txt forbids -- so trajectories hold the servers' real error results too.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Generator
from itertools import pairwise
from typing import Any

from agentworld.envs.mcp.episode import ToolCall, ToolTask
from agentworld.envs.mcp.servers import SITE_URL, WORKSPACE
from agentworld.seeding import keyed_rng

FILES = f"{WORKSPACE}/files"
REPO = f"{WORKSPACE}/repo"
Gen = Generator[ToolCall, str, None]

_WORDS = [
    "apple", "budget", "cedar", "delta", "ember", "falcon", "garnet", "harbor", "indigo", "juniper",
    "kettle", "lantern", "meadow", "nectar", "orchid", "pepper", "quartz", "raven", "saffron", "timber",
    "umber", "velvet", "willow", "yarrow", "zephyr",
]
_PEOPLE = [
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun", "Kofi", "Lena",
    "Mateo", "Nadia", "Omar", "Priya",
]
_CITIES = [
    "Lisbon", "Oslo", "Nairobi", "Lima", "Osaka", "Quito", "Tunis", "Hanoi", "Perth", "Riga", "Dakar",
    "Cusco",
]
_ZONES = [
    "America/New_York", "Europe/London", "Asia/Tokyo", "Australia/Sydney", "Europe/Berlin",
    "America/Sao_Paulo", "Asia/Kolkata", "Africa/Nairobi", "Pacific/Auckland", "America/Los_Angeles",
    "Asia/Singapore",
]


def _call(name: str, **arguments: Any) -> ToolCall:
    return {"name": name, "arguments": arguments}


def _text(obs: str) -> str:
    """The first text content of a recorded result (empty for errors without content)."""
    data = json.loads(obs)
    for item in data.get("content", []):
        if item.get("type") == "text":
            return item["text"]
    return data.get("error", {}).get("message", "")


def _csv(rng: random.Random) -> str:
    rows = ["item,qty,price"] + [f"{rng.choice(_WORDS)},{rng.randint(1, 40)},{rng.randint(1, 99)}.{rng.randint(0, 99):02d}"
                                 for _ in range(rng.randint(3, 7))]
    return "\n".join(rows) + "\n"


def _notes(rng: random.Random) -> str:
    items = rng.sample(_WORDS, 4)
    return "# Notes\n\n" + "".join(f"- TODO check {w} with {rng.choice(_PEOPLE)}\n" for w in items)


# -- filesystem -------------------------------------------------------------------
def filesystem_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "filesystem")
    project = rng.choice(_WORDS)
    files = {
        f"{project}/notes.md": _notes(rng),
        f"{project}/data/{rng.choice(_WORDS)}.csv": _csv(rng),
        f"{project}/README.txt": f"Project {project}, owner {rng.choice(_PEOPLE)}.\nStatus: draft\n",
        "archive/old.log": "".join(f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} event {w}\n"
                                   for w in rng.sample(_WORDS, 3)),
    }
    csv_path = next(p for p in files if p.endswith(".csv"))
    new_status = rng.choice(["review", "final", "blocked"])
    summary = f"summary-{rng.randint(1, 99)}.md"

    def script() -> Gen:
        yield _call("list_allowed_directories")
        yield _call("list_directory", path=f"{FILES}/{project}")
        if rng.random() < 0.5:
            yield _call("directory_tree", path=FILES)
        yield _call("read_text_file", path=f"{FILES}/{project}/notes.MD")  # wrong case: ENOENT
        notes = _text((yield _call("read_text_file", path=f"{FILES}/{project}/notes.md")))
        yield _call("read_text_file", path=f"{FILES}/{csv_path}", head=rng.randint(2, 4))
        yield _call("edit_file", path=f"{FILES}/{project}/README.txt",
                    edits=[{"oldText": "Status: draft", "newText": f"Status: {new_status}"}])
        todo = [line for line in notes.splitlines() if "TODO" in line]
        yield _call("write_file", path=f"{FILES}/{project}/{summary}",
                    content=f"{len(todo)} open items\n" + "\n".join(todo) + "\n")
        yield _call("search_files", path=FILES, pattern=rng.choice(["*.md", "**/*.csv", "*.log"]))
        if rng.random() < 0.5:
            yield _call("read_text_file", path="/etc/hostname")  # outside the allowed root
        else:
            yield _call("write_file", path=f"{FILES}/{project}/x.md")  # missing content
        yield _call("move_file", source=f"{FILES}/archive/old.log", destination=f"{FILES}/{project}/old.log")
        yield _call("read_multiple_files", paths=[f"{FILES}/{project}/README.txt", f"{FILES}/archive/old.log"])
        yield _call("create_directory", path=f"{FILES}/{project}/out")
        yield _call("list_directory", path=f"{FILES}/{project}")

    return ToolTask("filesystem", f"In the {project} project: set README status to {new_status}, write "
                    f"{summary} listing the open TODOs, and archive old.log into the project.",
                    {"servers": ["filesystem"], "files": files}, script)


# -- git ---------------------------------------------------------------------------
def git_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "git")
    mod = rng.choice(_WORDS)
    commits = [{"message": "Initial commit", "files": {"README.md": f"# {mod}\n", f"{mod}.py": "def main():\n    return 0\n"}}]
    for i in range(rng.randint(1, 3)):
        w = rng.choice(_WORDS)
        commits.append({"message": f"Add {w} helper", "files": {f"{mod}.py": f"def main():\n    return {i + 1}\n\n\ndef {w}():\n    return {w!r}\n"}})
    change = f"def main():\n    return {rng.randint(10, 99)}\n"
    branch = f"feature/{rng.choice(_WORDS)}"

    def script() -> Gen:
        yield _call("git_status", repo_path=REPO)
        yield _call("git_diff_unstaged", repo_path=REPO)
        log = _text((yield _call("git_log", repo_path=REPO, max_count=rng.randint(2, 5))))
        hashes = re.findall(r"Commit: ([0-9a-f]{40})", log) or ["HEAD"]
        yield _call("git_show", repo_path=REPO, revision=hashes[-1])
        yield _call("git_show", repo_path=REPO, revision="deadbeef")  # unknown revision
        yield _call("git_add", repo_path=REPO, files=[f"{mod}.py"])
        yield _call("git_diff_staged", repo_path=REPO)
        yield _call("git_commit", repo_path=REPO, message=f"Bump {mod} return value")
        yield _call("git_checkout", repo_path=REPO, branch_name=branch)  # does not exist yet
        yield _call("git_create_branch", repo_path=REPO, branch_name=branch)
        yield _call("git_checkout", repo_path=REPO, branch_name=branch)
        yield _call("git_branch", repo_path=REPO, branch_type="local")
        if rng.random() < 0.5:
            yield _call("git_add", repo_path=REPO, files=[])  # breaks minItems
        yield _call("git_log", repo_path=REPO, max_count=1)

    return ToolTask("git", f"Commit the pending change to {mod}.py and start branch {branch}.",
                    {"servers": ["git"], "repo": {"commits": commits, "worktree": {f"{mod}.py": change}}}, script)


# -- memory ------------------------------------------------------------------------
def memory_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "memory")
    people = rng.sample(_PEOPLE, 3)
    cities = rng.sample(_CITIES, 2)
    entities = [{"name": p, "entityType": "person", "observations": [f"works on {rng.choice(_WORDS)}"]} for p in people]
    entities += [{"name": c, "entityType": "city", "observations": []} for c in cities]

    def script() -> Gen:
        yield _call("create_entities", entities=entities)
        yield _call("create_relations", relations=[
            {"from": people[0], "to": cities[0], "relationType": "lives_in"},
            {"from": people[1], "to": cities[1], "relationType": "lives_in"},
            {"from": people[0], "to": people[2], "relationType": "mentors"},
        ])
        yield _call("add_observations", observations=[{"entityName": people[1], "contents": [f"speaks {rng.choice(['Basque', 'Twi', 'Tagalog', 'Welsh'])}"]}])
        yield _call("add_observations", observations=[{"entityName": "Nobody", "contents": ["ghost"]}])  # unknown entity
        yield _call("search_nodes", query=rng.choice(["lives", cities[0], "works"]))
        yield _call("open_nodes", names=[people[0], cities[1]])
        yield _call("delete_observations", deletions=[{"entityName": people[0], "observations": entities[0]["observations"]}])
        if rng.random() < 0.5:
            yield _call("create_entities", entities=[{"name": people[2]}])  # missing entityType
        yield _call("delete_entities", entityNames=[cities[1]])
        yield _call("read_graph")

    return ToolTask("memory", f"Record that {people[0]} lives in {cities[0]} and mentors {people[2]}, "
                    f"then tidy the graph.", {"servers": ["memory"]}, script)


# -- time --------------------------------------------------------------------------
def time_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "time")
    zones = rng.sample(_ZONES, 4)

    def script() -> Gen:
        for src, dst in pairwise(zones):
            yield _call("convert_time", source_timezone=src, time=f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}",
                        target_timezone=dst)
        yield _call("convert_time", source_timezone=zones[0], time="25:61", target_timezone=zones[1])
        yield _call("convert_time", source_timezone="Mars/Olympus", time="10:00", target_timezone=zones[2])
        yield _call("get_current_time", timezone=zones[3])
        yield _call("get_current_time")  # missing timezone

    return ToolTask("time", f"Plan a call across {', '.join(zones)}.", {"servers": ["time"]}, script)


# -- fetch (+ filesystem) ----------------------------------------------------------
def _page(title: str, paragraphs: list[str], links: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "".join(f'<li><a href="/{link}">{link}</a></li>' for link in links)
    return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><nav><ul>{nav}</ul></nav>"
            f"<article><h1>{title}</h1>{body}</article><footer>Local site</footer></body></html>")


def fetch_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "fetch")
    topics = rng.sample(_WORDS, 3)
    site: dict[str, str] = {"robots.txt": "User-agent: *\nDisallow: /private/\n"}
    names = [f"{t}.html" for t in topics]
    for t, name in zip(topics, names, strict=True):
        paras = [f"The {t} team meets in {rng.choice(_CITIES)} every {rng.choice(['Monday', 'Wednesday', 'Friday'])}."
                 for _ in range(rng.randint(3, 12))]
        site[name] = _page(f"About {t}", paras, names)
    site["index.html"] = _page("Home", [f"Welcome. See {', '.join(topics)}."], names)
    site["private/secret.html"] = _page("Secret", ["Not for robots."], [])

    def script() -> Gen:
        yield _call("fetch", url=f"{SITE_URL}/")
        yield _call("fetch", url=f"{SITE_URL}/{names[0]}", max_length=rng.choice([120, 200, 300]))
        yield _call("fetch", url=f"{SITE_URL}/{names[0]}", max_length=200, start_index=200)
        yield _call("fetch", url=f"{SITE_URL}/{names[1]}", raw=True, max_length=400)
        yield _call("fetch", url=f"{SITE_URL}/missing-{rng.randint(1, 9)}.html")
        yield _call("fetch", url=f"{SITE_URL}/private/secret.html")
        if rng.random() < 0.5:
            yield _call("fetch", url="not a url")
        page = _text((yield _call("fetch", url=f"{SITE_URL}/{names[2]}")))
        yield _call("write_file", path=f"{FILES}/{topics[2]}.md", content=page[:400])
        yield _call("read_text_file", path=f"{FILES}/{topics[2]}.md", tail=2)

    return ToolTask("fetch", f"Read the local site and save the {topics[2]} page to a file.",
                    {"servers": ["fetch", "filesystem"], "site": site}, script)


# -- everything + sequential thinking ----------------------------------------------
def everything_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "everything")
    a, b = rng.randint(-50, 500), round(rng.uniform(0, 100), 2)

    def script() -> Gen:
        yield _call("echo", message=f"hello {rng.choice(_WORDS)}")
        yield _call("get-sum", a=a, b=b)
        yield _call("get-sum", a=str(a), b=b)  # wrong type
        yield _call("get-structured-content", location=rng.choice(["New York", "Chicago", "Los Angeles"]))
        yield _call("get-annotated-message", messageType=rng.choice(["error", "success", "debug"]))
        yield _call("get-resource-links", count=rng.randint(1, 4))
        yield _call("get-resource-reference", resourceType="Text", resourceId=rng.randint(1, 5))
        yield _call("no-such-tool", x=1)
        yield _call("echo")

    return ToolTask("everything", "Exercise the reference server's tools.", {"servers": ["everything"]}, script)


def thinking_task(seed: int) -> ToolTask:
    rng = keyed_rng(seed, "mcp", "thinking")
    total = rng.randint(3, 5)
    goal = rng.choice(["migrate the build", "plan a release", "debug a flaky test", "split a module"])

    def script() -> Gen:
        for i in range(1, total + 1):
            args: dict[str, Any] = {"thought": f"Step {i} to {goal}: consider {rng.choice(_WORDS)}.",
                                    "nextThoughtNeeded": i < total, "thoughtNumber": i, "totalThoughts": total}
            if i == total - 1 and rng.random() < 0.5:
                args.update(isRevision=True, revisesThought=1)
            yield _call("sequentialthinking", **args)
        yield _call("sequentialthinking", thought="Branch idea", nextThoughtNeeded=False, thoughtNumber=total + 1,
                    totalThoughts=total + 1, branchFromThought=2, branchId=f"alt-{rng.randint(1, 9)}")
        yield _call("sequentialthinking", thought="missing counters", nextThoughtNeeded=True)

    return ToolTask("sequential-thinking", f"Think through how to {goal}.", {"servers": ["sequential-thinking"]}, script)


TEMPLATES: dict[str, Callable[[int], ToolTask]] = {
    "filesystem": filesystem_task,
    "git": git_task,
    "memory": memory_task,
    "time": time_task,
    "fetch": fetch_task,
    "everything": everything_task,
    "sequential-thinking": thinking_task,
}

# Registered here so that every template is in one table; the module reads this one's helpers.
from agentworld.envs.mcp.tasks_extra import EXTRA_TEMPLATES  # noqa: E402

TEMPLATES.update(EXTRA_TEMPLATES)


def template_families() -> dict[str, str]:
    """Template -> its first server (the families :func:`agentworld.envs.split.split_templates` keeps in train)."""
    return {name: make(0).options["servers"][0] for name, make in TEMPLATES.items()}


def make_task(seed: int, template: str | None = None) -> ToolTask:
    """The task for ``seed``: ``template`` if given, else one drawn from the seed."""
    name = template or keyed_rng(seed, "mcp", "template").choice(sorted(TEMPLATES))
    if name not in TEMPLATES:
        raise KeyError(f"unknown MCP task template {name!r} (known: {', '.join(TEMPLATES)})")
    return TEMPLATES[name](seed)
