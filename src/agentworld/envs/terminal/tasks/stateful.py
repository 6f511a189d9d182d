"""Outputs that depend on what earlier steps changed, and the errors commands report."""

from __future__ import annotations

import json
import random

from agentworld.envs.terminal.task import TerminalTask, cmd
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import CITIES, FRUITS, NAMES, PROJECTS, ident

T = TerminalTask
add = TEMPLATES.add

_COUNTER = """#!/bin/bash
# Counts its own runs in a state file.
f=${STATE:-.runs}
n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$f"
echo "run number $n (state in $f)"
"""

_TODO = """import json, sys
from pathlib import Path

db = Path("todo.json")
items = json.loads(db.read_text()) if db.exists() else []
cmd, *rest = sys.argv[1:] or ["list"]
if cmd == "add":
    items.append({"id": len(items) + 1, "text": " ".join(rest), "done": False})
    print(f"added #{len(items)}")
elif cmd == "done":
    n = int(rest[0])
    if not 1 <= n <= len(items):
        sys.exit(f"todo: no item #{n} (have {len(items)})")
    items[n - 1]["done"] = True
    print(f"finished #{n}")
elif cmd == "list":
    for it in items:
        print(f"[{'x' if it['done'] else ' '}] {it['id']}. {it['text']}")
    print(f"{sum(not it['done'] for it in items)} open, {sum(it['done'] for it in items)} done")
else:
    sys.exit(f"todo: unknown command {cmd!r} (add, done, list)")
db.write_text(json.dumps(items))
"""


@add("counter-state", "files")
def counter_state(rng: random.Random) -> T:
    runs = rng.randrange(2, 5)
    state = rng.choice([".runs", "count.txt", "state/n"])
    setup = "mkdir -p state\n" if "/" in state else ""
    return T("counter-state", f"The script count.sh remembers how often it ran in {state}; run it, reset it and run again.",
             files={"count.sh": _COUNTER}, modes={"count.sh": 0o755}, env={"STATE": state}, setup=setup,
             category="files", actions=[
                 cmd(" ; ".join(["./count.sh"] * runs)), cmd(f"cat {state}"), cmd("./count.sh"),
                 cmd(f"rm {state} && ./count.sh"), cmd(f"echo 40 > {state} && ./count.sh && ./count.sh")])


@add("todo-app", "python")
def todo_app(rng: random.Random) -> T:
    items = rng.sample(FRUITS, 3)
    n = rng.randrange(1, 4)
    return T("todo-app", "Use the little todo.py tool: add items, finish some, list them, and try a bad id.",
             files={"todo.py": _TODO}, category="python", actions=[
                 cmd("python3 todo.py list"), *(cmd(f"python3 todo.py add buy {it}") for it in items),
                 cmd(f"python3 todo.py done {n}"), cmd("python3 todo.py list"), cmd("python3 todo.py done 9"),
                 cmd("python3 todo.py archive; echo exit=$?"), cmd("python3 -m json.tool todo.json | head -n 6")])


@add("git-tags-describe", "git")
def git_tags(rng: random.Random) -> T:
    project = rng.choice(PROJECTS)
    extra = rng.randrange(1, 4)
    setup = ("git config --global user.name 'Rel Eng' && git config --global user.email rel@example.com "
             "&& git config --global init.defaultBranch main && git config --global advice.detachedHead false\n"
             f"mkdir {project} && cd {project} && git init -q && echo 1.0 > VERSION && git add . "
             "&& git commit -qm 'Release 1.0' && git tag -a v1.0 -m 'v1.0'\n")
    commits = " && ".join(f"echo fix{i} >> CHANGES && git add CHANGES && git commit -qm 'Fix {i}'" for i in range(1, extra + 1))
    return T("git-tags-describe", f"Tag releases of {project} and see how git describe counts commits since a tag.",
             setup=setup, category="git", actions=[
                 cmd(f"cd {project} && git tag -n"), cmd(commits), cmd("git describe --tags"),
                 cmd("git tag v1.1 && git describe --tags && git tag --sort=-v:refname"),
                 cmd("git checkout -q v1.0 && cat VERSION && git describe --tags"), cmd("git checkout -q main && git log --oneline | wc -l"),
                 cmd("git tag v1.1")])


@add("symlink-chain", "files")
def symlink_chain(rng: random.Random) -> T:
    city = rng.choice(CITIES)
    return T("symlink-chain", f"Link current -> releases/{city.lower()}, follow the chain, then break and repair it.",
             files={f"releases/{city.lower()}/app.txt": f"build for {city}\n", "releases/old/app.txt": "old build\n"},
             category="files", actions=[
                 cmd(f"ln -s releases/{city.lower()} current && ln -s current live && ls -l current live"),
                 cmd("cat live/app.txt && readlink live && readlink -f live"),
                 cmd(f"mv releases/{city.lower()} releases/moved && cat live/app.txt"), cmd("ls -lL live; find . -xtype l"),
                 cmd("ln -sfn releases/old current && cat live/app.txt"), cmd("ln -s releases/old current")])


@add("dir-stack", "environment")
def dir_stack(rng: random.Random) -> T:
    dirs = [f"/tmp/{rng.choice(PROJECTS)}/{d}" for d in ("src", "docs", "build")]
    return T("dir-stack", "Move between project folders with pushd and popd and watch the directory stack.",
             setup="mkdir -p " + " ".join(dirs) + "\n", category="environment", actions=[
                 cmd(f"pushd {dirs[0]}"), cmd(f"pushd {dirs[1]}"), cmd("dirs -v"), cmd(f"pushd {dirs[2]} && pwd"),
                 cmd("popd && popd && pwd"), cmd("cd - && cd -"), cmd("popd; popd; echo status=$?")])


@add("shell-functions", "environment")
def shell_functions(rng: random.Random) -> T:
    name = rng.choice(NAMES)
    return T("shell-functions", "Define an alias and a shell function, use them, inspect them with type, then remove them.",
             category="environment", actions=[
                 cmd("alias ll='ls -la --color=never'; type ll"),
                 cmd(f"greet() {{ echo \"hello ${{1:-{name}}} from $FUNCNAME\"; return 3; }}"),
                 cmd("greet; echo status=$?; greet team"), cmd("type greet | head -n 3"), cmd("ll | head -n 3"),
                 cmd("unalias ll; unset -f greet; ll; greet")])


@add("python-syntax-errors", "errors")
def python_syntax_errors(rng: random.Random) -> T:
    v = rng.choice(["total", "count", "price", "score"])
    n = rng.randrange(3, 9)
    broken = f"def report({v}s)\n    {v} = sum({v}s)\n    print('{v}:', {v})\n\nreport(range({n}))\n"
    indent = f"def report({v}s):\n    {v} = sum({v}s)\n      print('{v}:', {v})\n\nreport(range({n}))\n"
    name_err = f"def report({v}s):\n    {v} = sum({v}s)\n    print('{v}:', {v}_sum)\n\nreport(range({n}))\n"
    return T("python-syntax-errors", "Three versions of report.py fail in different ways; run each and fix the last one.",
             files={"v1.py": broken, "v2.py": indent, "v3.py": name_err}, category="errors", actions=[
                 cmd("python3 v1.py"), cmd("python3 v2.py"), cmd("python3 v3.py"),
                 cmd(f"sed -i 's/{v}_sum/{v}/' v3.py && python3 v3.py"), cmd("python3 -m py_compile v1.py; echo exit=$?")])


@add("json-errors", "errors")
def json_errors(rng: random.Random) -> T:
    name, city = rng.choice(NAMES), rng.choice(CITIES)
    good = json.dumps({"user": name, "city": city, "visits": rng.randrange(1, 50)})
    bad = good[:-1].replace('", "city"', '" "city"')
    return T("json-errors", "config.json does not parse; find the error with jq and Python, fix it, read a field.",
             files={"config.json": bad + "\n", "good.json": good + "\n"}, category="errors", actions=[
                 cmd("jq . config.json"), cmd("python3 -m json.tool config.json"), cmd("cat config.json"),
                 cmd("cp good.json config.json && jq -r .city config.json"), cmd("jq '.visits + 1' config.json"),
                 cmd("jq .user.name config.json")])


@add("bash-strict-mode", "errors")
def bash_strict(rng: random.Random) -> T:
    var = rng.choice(["TARGET", "OUTDIR", "RELEASE", "BUCKET"])
    script = (f"#!/bin/bash\nset -euo pipefail\necho \"deploying to ${var}\"\ncp build/app.txt \"${var}/\"\n"
              "echo done\n")
    return T("bash-strict-mode", "deploy.sh stops early under set -euo pipefail; find out why and make it run.",
             files={"deploy.sh": script, "build/app.txt": "app\n"}, modes={"deploy.sh": 0o755}, category="errors",
             actions=[
                 cmd("./deploy.sh; echo exit=$?"), cmd("bash -n deploy.sh && echo syntax ok"),
                 cmd(f"{var}=/nonexistent ./deploy.sh; echo exit=$?"), cmd(f"mkdir -p out && {var}=out ./deploy.sh && ls out"),
                 cmd("false | true; echo $?; set -o pipefail; false | true; echo $?; set +o pipefail")])


@add("gcc-errors", "build")
def gcc_errors(rng: random.Random) -> T:
    n = rng.randrange(3, 12)
    src = (f"#include <stdio.h>\n\nint main(void) {{\n    int total = 0\n    for (int i = 0; i < {n}; i++)\n"
           "        total += i;\n    printf(\"%d\\n\", totl);\n    return 0;\n}\n")
    return T("gcc-errors", "sum.c does not compile; read the compiler errors and fix them one by one.",
             files={"sum.c": src}, category="build", actions=[
                 cmd("gcc -Wall -o sum sum.c", 20), cmd("sed -i 's/int total = 0$/int total = 0;/' sum.c && gcc -Wall -o sum sum.c", 20),
                 cmd("sed -i 's/totl/total/' sum.c && gcc -Wall -o sum sum.c && ./sum", 20),
                 cmd("gcc -Wall -Wextra -c sum.c -o /nonexistent/sum.o", 20), cmd("ls -l sum | cut -c1-10")])


@add("permission-errors", "permissions")
def permission_errors(rng: random.Random) -> T:
    name = ident(rng)
    return T("permission-errors", f"Files of {name} refuse to open; read the errors and restore access.",
             files={f"{name}/secret.txt": "classified\n", f"{name}/run.sh": "#!/bin/sh\necho ran\n"},
             setup=f"chmod 000 /workspace/{name}/secret.txt && chmod 644 /workspace/{name}/run.sh && chmod 555 /workspace/{name}\n",
             category="permissions", actions=[
                 cmd(f"cat {name}/secret.txt"), cmd(f"./{name}/run.sh"), cmd(f"touch {name}/new.txt"),
                 cmd(f"ls -l {name}"), cmd(f"chmod 600 {name}/secret.txt && chmod u+w {name} && cat {name}/secret.txt && touch {name}/new.txt"),
                 cmd(f"sh {name}/run.sh && stat -c '%A %n' {name} {name}/*")])
