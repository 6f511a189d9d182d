"""Long outputs and programs driven by keys: pagers, editors, debuggers, prompts, full screens."""

from __future__ import annotations

import random

from agentworld.envs.terminal.task import TerminalTask, cmd, keys
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import CITIES, FRUITS, NAMES, PROJECTS, SERVICES, csv_rows, log_lines

T = TerminalTask
add = TEMPLATES.add


@add("long-listing", "text")
def long_listing(rng: random.Random) -> T:
    n = rng.randrange(250, 600)
    return T("long-listing", f"Produce a few long listings ({n} numbers, system folders) and cut them down to size.",
             category="text", actions=[
                 cmd(f"seq 1 {n}"), cmd(f"seq 1 {n} | paste -sd+ | bc"), cmd("ls -l /usr/bin | head -n 260"),
                 cmd("ls /usr/bin | wc -l"), cmd(f"seq -w 1 {n} | pr -6 -t -w 100 | tail -n 20")])


@add("log-report", "text")
def log_report(rng: random.Random) -> T:
    lines = log_lines(rng, rng.randrange(300, 450), day=f"2024-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)}")
    return T("log-report", "Read the whole service log, then summarize it by level and by service.",
             files={"logs/service.log": "\n".join(lines) + "\n"}, category="text", actions=[
                 cmd("cat logs/service.log"), cmd("awk '{print $3}' logs/service.log | sort | uniq -c | sort -rn"),
                 cmd("grep -c ERROR logs/service.log; grep ERROR logs/service.log | tail -n 5"),
                 cmd("awk '{print $4}' logs/service.log | sort | uniq -c"), cmd("nl -ba logs/service.log | sed -n '100,140p'")])


@add("python-table", "python")
def python_table(rng: random.Random) -> T:
    rows = rng.randrange(120, 260)
    base = rng.choice([2, 3, 7])
    script = (f"for n in range(1, {rows} + 1):\n"
              f"    print(f\"{{n:4d}} {{n * n:8d}} {{{base} ** (n % 20):>14d}} {{'#' * (n % 30)}}\")\n")
    return T("python-table", f"Print a {rows}-row table of squares and powers of {base}, then page and filter it.",
             files={"table.py": script}, category="python", actions=[
                 cmd("python3 table.py"), cmd("python3 table.py | tail -n 3"), cmd("python3 table.py | awk '$2 % 7 == 0' | wc -l"),
                 cmd("python3 table.py > table.txt && wc -c table.txt && head -c 300 table.txt")])


@add("vim-substitute", "editors")
def vim_substitute(rng: random.Random) -> T:
    old, new = rng.sample(SERVICES, 2)
    body = "".join(f"{old}.endpoint{i} = http://{old}.local:{8000 + i}\n" for i in range(1, rng.randrange(5, 9)))
    return T("vim-substitute", f"In vim, rename every {old} to {new}, delete the last line, undo that, and save.",
             files={"routes.ini": body}, category="editors", actions=[
                 cmd("vim routes.ini", 1), keys((f":%s/{old}/{new}/g\n", 0.4)), keys(("G", 0.2), ("dd", 0.4)),
                 keys(("u", 0.4)), keys((f"/{new}.endpoint3\n", 0.4)), keys((":wq\n", 1)), cmd(f"grep -c {new} routes.ini")])


@add("vim-insert-new", "editors")
def vim_insert_new(rng: random.Random) -> T:
    items = rng.sample(FRUITS, 3)
    return T("vim-insert-new", "Create notes.md in vim with a heading and a list, quit without saving once, then save.",
             category="editors", actions=[
                 cmd("vim notes.md", 1), keys(("i# Market\n", 0.3), ("\n".join(f"- {x}" for x in items), 0.3), ("Escape", 0.3)),
                 keys((":q\n", 0.5)), keys((":w\n", 0.5)), keys(("ggyyP", 0.3), (":q!\n", 1)), cmd("cat notes.md && wc -l notes.md")])


@add("less-navigate", "editors")
def less_navigate(rng: random.Random) -> T:
    rows = csv_rows(rng, rng.randrange(150, 250))
    body = "id,name,city,amount\n" + "".join(f"{i},{n},{c},{a}\n" for i, (n, c, a) in enumerate(rows, 1))
    city = rng.choice(CITIES)
    return T("less-navigate", f"Open the sales export in less with line numbers, jump around and show only {city} rows.",
             files={"export.csv": body}, category="editors", actions=[
                 cmd("less -N export.csv", 1), keys(("50g", 0.5)), keys((f"&{city}\n", 0.5)), keys(("&\n", 0.5)),
                 keys(("G", 0.5)), keys(("q", 0.5)), cmd(f"grep -c {city} export.csv")])


@add("python-pdb", "python")
def python_pdb(rng: random.Random) -> T:
    n = rng.randrange(4, 9)
    script = (f"def average(values):\n    total = sum(values)\n    return total / len(values)\n\n"
              f"data = [list(range(k)) for k in range({n})]\nfor row in data:\n    print(average(row))\n")
    return T("python-pdb", "avg.py crashes; step through it in pdb, inspect the values and find the empty list.",
             files={"avg.py": script}, category="python", actions=[
                 cmd("python3 avg.py"), cmd("python3 -m pdb avg.py", 1.5), keys(("b average\n", 0.4)), keys(("c\n", 0.5)),
                 keys(("p values, len(values)\n", 0.4)), keys(("where\n", 0.4)), keys(("q\n", 1))])


@add("python-repl-objects", "repl")
def python_repl_objects(rng: random.Random) -> T:
    names = rng.sample(NAMES, 3)
    return T("python-repl-objects", "In the Python REPL, build a dictionary over several lines, explore it, and leave with Ctrl-D.",
             category="repl", actions=[
                 cmd("python3 -q", 1.5), keys((f"ages = {{{', '.join(f'{n!r}: {rng.randrange(20, 60)}' for n in names)}}}\n", 0.4)),
                 keys(("for name, age in sorted(ages.items()):\n", 0.3), ("    print(f'{name:>8} {age}')\n", 0.3), ("\n", 0.5)),
                 keys(("max(ages, key=ages.get)\n", 0.4)), keys((f"ages['{rng.choice(PROJECTS)}']\n", 0.5)),
                 keys(("dir(ages)[-5:]\n", 0.4)), keys(("C-d", 1))])


@add("read-prompts", "processes")
def read_prompts(rng: random.Random) -> T:
    name, city = rng.choice(NAMES), rng.choice(CITIES)
    script = ("#!/bin/bash\nread -p 'Your name: ' name\nread -p 'City: ' city\n"
              "read -s -p 'Password: ' pw; echo\nread -p 'Continue? [y/N] ' ok\n"
              "[[ $ok == [yY]* ]] || { echo aborted; exit 1; }\n"
              "echo \"registered $name from $city (password of ${#pw} characters)\"\n")
    return T("read-prompts", "Answer the questions of the interactive setup script, once to the end and once aborting.",
             files={"setup.sh": script}, modes={"setup.sh": 0o755}, category="processes", actions=[
                 cmd("./setup.sh", 0.5), keys((f"{name}\n", 0.3)), keys((f"{city}\n", 0.3)), keys(("s3cret\n", 0.3)),
                 keys(("y\n", 1)), cmd("./setup.sh", 0.5), keys(("x\n", 0.3), ("y\n", 0.3), ("z\n", 0.3), ("\n", 1)),
                 cmd("echo last=$?")])


@add("watch-progress", "processes")
def watch_progress(rng: random.Random) -> T:
    n = rng.randrange(3, 7)
    return T("watch-progress", f"Start a job that writes {n} files, watch the folder fill up with watch, then stop watching.",
             category="processes", actions=[
                 cmd(f"mkdir out && (for i in $(seq 1 {n}); do sleep 0.4; echo $i > out/part$i; done) &"),
                 cmd("watch -n 0.5 'ls out | wc -l; ls out'", 1.5), keys(("", 2.5)), keys(("C-c", 0.5)),
                 cmd("wait; ls out | wc -l"), cmd("cat out/part* | paste -sd,")])


@add("top-sort-keys", "processes")
def top_sort_keys(rng: random.Random) -> T:
    mb = rng.randrange(20, 80)
    return T("top-sort-keys", f"Start a process holding {mb} MB, then find it in top sorted by memory and quit.",
             category="processes", actions=[
                 cmd(f"python3 -c 'import time; b = bytearray({mb} * 2**20); time.sleep(60)' & sleep 1"),
                 cmd("top -d 10", 1.5), keys(("M", 1.0)), keys(("c", 1.0)), keys(("1", 0.5), ("q", 0.5)),
                 cmd("ps -o pid,rss,args --sort=-rss | head -n 3 | cut -c1-80"), cmd("kill %1 && wait")])
