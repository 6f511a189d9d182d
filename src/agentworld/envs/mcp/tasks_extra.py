"""More MCP task templates: other task shapes on the same servers, so held-out templates
(see :mod:`agentworld.envs.split`) test new tasks rather than unseen servers only."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from agentworld.envs.mcp.episode import ToolTask
from agentworld.envs.mcp.servers import SITE_URL
from agentworld.envs.mcp.tasks import _CITIES, _PEOPLE, _WORDS, FILES, REPO, Gen, _call, _csv, _page, _text
from agentworld.seeding import keyed_rng


def _rng(seed: int, name: str) -> random.Random:
    return keyed_rng(seed, "mcp", name)


def filesystem_audit_task(seed: int) -> ToolTask:
    rng = _rng(seed, "filesystem-audit")
    team = rng.choice(_WORDS)
    files = {f"{team}/reports/q{q}.csv": _csv(rng) for q in rng.sample([1, 2, 3, 4], 3)}
    files[f"{team}/config.ini"] = f"[main]\nowner = {rng.choice(_PEOPLE)}\nretention_days = {rng.randint(7, 90)}\n"
    files[f"{team}/logs/app.log"] = "".join(f"line {i} {rng.choice(_WORDS)}\n" for i in range(rng.randint(20, 40)))
    files[f"{team}/cache/tmp.bin"] = "x" * rng.randint(100, 900)
    days = rng.randint(100, 365)

    def script() -> Gen:
        yield _call("list_directory_with_sizes", path=f"{FILES}/{team}", sortBy="size")
        yield _call("directory_tree", path=f"{FILES}/{team}", excludePatterns=["cache"])
        yield _call("read_text_file", path=f"{FILES}/{team}/logs/app.log", tail=rng.randint(2, 5))
        yield _call("read_text_file", path=f"{FILES}/{team}/logs/app.log", head=2, tail=2)  # both: refused
        yield _call("edit_file", path=f"{FILES}/{team}/config.ini", dryRun=True,
                    edits=[{"oldText": "retention_days = ", "newText": f"retention_days = {days} # was "}])
        yield _call("edit_file", path=f"{FILES}/{team}/config.ini",
                    edits=[{"oldText": "owner = nobody", "newText": "owner = someone"}])  # no match
        yield _call("search_files", path=f"{FILES}/{team}", pattern="**/*.csv", excludePatterns=["**/q1*"])
        yield _call("move_file", source=f"{FILES}/{team}/cache/tmp.bin", destination=f"{FILES}/{team}/config.ini")
        yield _call("get_file_info", path=f"{FILES}/{team}/missing.txt")

    return ToolTask("filesystem-audit", f"Audit the {team} folder: sizes, config, recent log lines; plan a "
                    f"retention of {days} days.", {"servers": ["filesystem"], "files": files}, script)


def git_review_task(seed: int) -> ToolTask:
    rng = _rng(seed, "git-review")
    mod = rng.choice(_WORDS)
    commits = [{"message": "Initial import", "files": {f"{mod}/core.py": "VALUE = 1\n", "setup.cfg": "[metadata]\n"}}]
    for i in range(rng.randint(2, 4)):
        commits.append({"message": f"Tune {rng.choice(_WORDS)} ({i + 2})",
                        "files": {f"{mod}/core.py": f"VALUE = {i + 2}\n"}})
    branch = f"review/{rng.choice(_PEOPLE).lower()}"

    def script() -> Gen:
        yield _call("git_branch", repo_path=REPO, branch_type="all")
        log = _text((yield _call("git_log", repo_path=REPO)))
        hashes = re.findall(r"Commit: ([0-9a-f]{40})", log) or ["HEAD"]
        yield _call("git_create_branch", repo_path=REPO, branch_name=branch, base_branch=hashes[-1][:12])  # not a branch
        yield _call("git_create_branch", repo_path=REPO, branch_name=branch, base_branch="main")
        yield _call("git_diff", repo_path=REPO, target=hashes[-1], context_lines=rng.randint(0, 3))
        yield _call("git_show", repo_path=REPO, revision=hashes[0])
        yield _call("git_branch", repo_path=REPO, branch_type="local", contains=hashes[-1])
        yield _call("git_branch", repo_path=REPO, branch_type="remote")
        yield _call("git_diff", repo_path=REPO, target="no-such-branch")
        yield _call("git_reset", repo_path=REPO)
        yield _call("git_status", repo_path=REPO)
        yield _call("git_log", repo_path=REPO, max_count=2, start_timestamp="yesterday")

    return ToolTask("git-review", f"Review what changed in {mod} since the first commit and open branch {branch} there.",
                    {"servers": ["git"], "repo": {"commits": commits}}, script)


def memory_org_task(seed: int) -> ToolTask:
    rng = _rng(seed, "memory-org")
    people = rng.sample(_PEOPLE, 4)
    teams = [f"team-{w}" for w in rng.sample(_WORDS, 2)]

    def script() -> Gen:
        yield _call("read_graph")
        yield _call("create_entities", entities=[{"name": t, "entityType": "team", "observations": [f"based in {rng.choice(_CITIES)}"]}
                                                 for t in teams])
        yield _call("create_entities", entities=[{"name": p, "entityType": "person", "observations": []} for p in people])
        yield _call("create_relations", relations=[{"from": p, "to": teams[i % 2], "relationType": "member_of"}
                                                   for i, p in enumerate(people)])
        yield _call("create_relations", relations=[{"from": people[0], "to": teams[0], "relationType": "member_of"}])
        yield _call("search_nodes", query="team")
        yield _call("delete_relations", relations=[{"from": people[1], "to": teams[1], "relationType": "member_of"}])
        yield _call("open_nodes", names=[teams[1], "Unknown Person"])
        yield _call("add_observations", observations=[{"entityName": teams[0], "contents": [f"{len(people)} people"]}])
        yield _call("search_nodes", query=people[1])

    return ToolTask("memory-org", f"Record the teams {teams[0]} and {teams[1]} and who belongs to which.",
                    {"servers": ["memory"]}, script)


# Other zones than the time template's: the same conversion, recorded in both, would be a
# training turn inside the held-out set.
_DEADLINE_ZONES = ["Europe/Paris", "America/Chicago", "Asia/Dubai", "America/Denver", "Asia/Seoul", "Europe/Madrid",
                   "America/Toronto", "Asia/Jakarta", "Africa/Cairo", "America/Mexico_City"]


def time_deadlines_task(seed: int) -> ToolTask:
    rng = _rng(seed, "time-deadlines")
    home, *others = rng.sample(_DEADLINE_ZONES, 3)

    def script() -> Gen:
        yield _call("get_current_time", timezone=home)
        for zone in others:
            yield _call("convert_time", source_timezone=home, time=f"{rng.choice([0, 9, 17, 23])}:{rng.choice(['00', '30'])}",
                        target_timezone=zone)
        yield _call("convert_time", source_timezone=home, time="9am", target_timezone=others[0])
        yield _call("convert_time", source_timezone=home, time="12:00", target_timezone=home)
        yield _call("convert_time", source_timezone="UTC", time="00:00", target_timezone=others[1])
        yield _call("get_current_time", timezone="Europe/Atlantis")

    return ToolTask("time-deadlines", f"Work out when a {home} deadline falls for colleagues in {' and '.join(others)}.",
                    {"servers": ["time"]}, script)


def fetch_notes_task(seed: int) -> ToolTask:
    rng = _rng(seed, "fetch-notes")
    people = rng.sample(_PEOPLE, 3)
    site: dict[str, str] = {"robots.txt": "User-agent: *\nDisallow: /drafts/\n"}
    pages = [f"{p.lower()}.html" for p in people]
    for p, name in zip(people, pages, strict=True):
        site[name] = _page(f"{p}'s profile", [f"{p} works in {rng.choice(_CITIES)} on {rng.choice(_WORDS)}."], pages)
    site["team.html"] = _page("Team", [f"Members: {', '.join(people)}."], pages)
    site["drafts/plan.html"] = _page("Plan", ["Draft."], [])

    def script() -> Gen:
        yield _call("fetch", url=f"{SITE_URL}/team.html")
        for name in pages[:2]:
            yield _call("fetch", url=f"{SITE_URL}/{name}", max_length=rng.choice([80, 150, 400]))
        yield _call("fetch", url=f"{SITE_URL}/drafts/plan.html")
        yield _call("create_entities", entities=[{"name": p, "entityType": "person", "observations": [f"profile {n}"]}
                                                 for p, n in zip(people, pages, strict=True)])
        yield _call("fetch", url=f"{SITE_URL}/{pages[2]}", start_index=10_000)
        yield _call("search_nodes", query=pages[0])
        yield _call("fetch", url="ftp://localhost/file.txt")

    return ToolTask("fetch-notes", f"Read the team pages of the local site and remember who {', '.join(people)} are.",
                    {"servers": ["fetch", "memory"], "site": site}, script)


def everything_tools_task(seed: int) -> ToolTask:
    rng = _rng(seed, "everything-tools")
    topic = rng.choice(["solar power", "tide tables", "bread baking", "bird migration"])

    def script() -> Gen:
        yield _call("trigger-long-running-operation", duration=1, steps=rng.randint(2, 4))
        yield _call("toggle-simulated-logging")
        # Spelled out: the tool's own argument is called "name".
        yield {"name": "gzip-file-as-resource", "arguments": {
            "name": f"{rng.choice(_WORDS)}.txt.gz", "data": "hello " * rng.randint(2, 6),
            "outputType": rng.choice(["resourceLink", "resource"])}}
        yield _call("get-annotated-message", messageType="success", includeImage=False)
        yield _call("get-sum", a=rng.randint(1, 9))
        yield _call("get-resource-reference", resourceType="Text", resourceId=rng.randint(1, 9))
        yield _call("get-resource-reference", resourceType="Text", resourceId=0)
        yield _call("echo", message=topic.upper())

    return ToolTask("everything-tools", f"Try the reference server's slower and resource tools on {topic}.",
                    {"servers": ["everything"]}, script)


def thinking_revise_task(seed: int) -> ToolTask:
    rng = _rng(seed, "thinking-revise")
    goal = rng.choice(["choose a database", "cut cloud costs", "shorten the test suite", "rename a public API"])
    total = rng.randint(2, 4)

    def script() -> Gen:
        args: dict[str, Any]
        for i in range(1, total + 1):
            yield _call("sequentialthinking", thought=f"To {goal}, first weigh {rng.choice(_WORDS)} ({i}).",
                        nextThoughtNeeded=True, thoughtNumber=i, totalThoughts=total)
        args = {"thought": "That estimate was too small; more steps are needed.", "nextThoughtNeeded": True,
                "thoughtNumber": total + 1, "totalThoughts": total, "needsMoreThoughts": True}
        yield _call("sequentialthinking", **args)
        yield _call("sequentialthinking", thought="Revisit the first step.", nextThoughtNeeded=True,
                    thoughtNumber=total + 2, totalThoughts=total + 3, isRevision=True, revisesThought=1)
        yield _call("sequentialthinking", thought="Done.", nextThoughtNeeded=False, thoughtNumber="last",
                    totalThoughts=total + 3)
        yield _call("sequentialthinking", thought=f"Conclusion: {goal} in {total + 3} steps.", nextThoughtNeeded=False,
                    thoughtNumber=total + 3, totalThoughts=total + 3)

    return ToolTask("thinking-revise", f"Reason step by step about how to {goal}, revising as you go.",
                    {"servers": ["sequential-thinking"]}, script)


EXTRA_TEMPLATES: dict[str, Callable[[int], ToolTask]] = {
    "filesystem-audit": filesystem_audit_task,
    "git-review": git_review_task,
    "memory-org": memory_org_task,
    "time-deadlines": time_deadlines_task,
    "fetch-notes": fetch_notes_task,
    "everything-tools": everything_tools_task,
    "thinking-revise": thinking_revise_task,
}
