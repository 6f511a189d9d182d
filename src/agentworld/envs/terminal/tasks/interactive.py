"""Editors, pagers and REPLs, plus long sessions whose later steps depend on earlier ones."""

from __future__ import annotations

import random

from agentworld.envs.sandbox.sandbox import USER_ADMIN_CAPABILITIES
from agentworld.envs.terminal.task import TerminalTask, cmd, keys
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import CITIES, FRUITS, NAMES, PROJECTS, csv_rows, ident, log_lines

T = TerminalTask
add = TEMPLATES.add


@add("vim-edit", "editors")
def vim_edit(rng: random.Random) -> T:
    port = rng.randrange(3000, 9000)
    return T("vim-edit", f"Use vim to change the port in server.conf to {port} and add a comment line.",
             files={"server.conf": "host=0.0.0.0\nport=8080\nworkers=4\n"}, category="editors", actions=[
                 cmd("vim server.conf", 1), keys(("2G", 0.2), ("cc", 0.2), (f"port={port}", 0.2), ("Escape", 0.2)),
                 keys(("O# edited with vim", 0.2), ("Escape", 0.2)), keys((":wq\n", 1)), cmd("cat server.conf")])


@add("nano-edit", "editors")
def nano_edit(rng: random.Random) -> T:
    item = rng.choice(FRUITS)
    return T("nano-edit", f"Add '{item}' to the shopping list with nano and save it.",
             files={"shopping.txt": "milk\nbread\n"}, category="editors", actions=[
                 cmd("nano shopping.txt", 1), keys(("M-/", 0.3), (f"\n{item}", 0.3)), keys(("C-o", 0.5)),
                 keys(("\n", 0.5)), keys(("C-x", 1)), cmd("cat shopping.txt")])


@add("less-browse", "editors")
def less_browse(rng: random.Random) -> T:
    lines = log_lines(rng, 120)
    return T("less-browse", "Page through the long log with less and search for the first error.",
             files={"big.log": "\n".join(lines) + "\n"}, category="editors", actions=[
                 cmd("less big.log", 1), keys(("/ERROR\n", 0.5)), keys((" ", 0.5)), keys(("G", 0.5)), keys(("q", 0.5)),
                 cmd("grep -m1 -n ERROR big.log")])


@add("python-repl", "repl")
def python_repl(rng: random.Random) -> T:
    a, b = rng.randrange(10, 99), rng.randrange(2, 9)
    return T("python-repl", "Use the Python REPL as a calculator and inspect an error.",
             category="repl", actions=[
                 cmd("python3", 1.5), keys((f"x = {a} ** {b}\n", 0.4)), keys(("x\n", 0.4)),
                 keys((f"[n for n in range({b}) if n % 2]\n", 0.4)), keys(("import math; math.sqrt(-1)\n", 0.5)),
                 keys(("exit()\n", 1))])


@add("sqlite-shell", "repl")
def sqlite_shell(rng: random.Random) -> T:
    rows = csv_rows(rng, 6)
    inserts = "".join(f"INSERT INTO sales VALUES('{n}','{c}',{a});\n" for n, c, a in rows)
    return T("sqlite-shell", "Create a small SQLite database and query it in the sqlite3 shell.",
             files={"seed.sql": "CREATE TABLE sales(name TEXT, city TEXT, amount INT);\n" + inserts},
             category="repl", actions=[
                 cmd("sqlite3 shop.db < seed.sql && ls -l shop.db"), cmd("sqlite3 shop.db", 1),
                 keys(("SELECT count(*) FROM sales;\n", 0.5)),
                 keys(("SELECT city, sum(amount) FROM sales GROUP BY city ORDER BY 2 DESC;\n", 0.5)),
                 keys(("SELECT * FROM nosuch;\n", 0.5)), keys((".quit\n", 1))])


@add("bc-calc", "repl")
def bc_calc(rng: random.Random) -> T:
    a, b = rng.randrange(100, 999), rng.randrange(3, 17)
    return T("bc-calc", "Use bc for exact arithmetic with a chosen precision.",
             category="repl", actions=[
                 cmd(f"echo '{a} / {b}' | bc"), cmd(f"echo 'scale=4; {a} / {b}' | bc"), cmd("bc -q", 1),
                 keys((f"2 ^ {b}\n", 0.4)), keys(("sqrt(2)\n", 0.4)), keys(("quit\n", 1))])


@add("top-snapshot", "editors")
def top_snapshot(rng: random.Random) -> T:
    return T("top-snapshot", "Look at running processes with top, then take a batch snapshot.",
             category="editors", actions=[
                 cmd("sleep 120 &"), cmd("top", 1.5), keys(("q", 0.5)), cmd("top -b -n 1 | head -n 5 | cut -c1-70"),
                 cmd("kill %1")])


@add("session-project", "session")
def session_project(rng: random.Random) -> T:
    name = ident(rng)
    n = rng.randrange(3, 7)
    return T("session-project", f"Set up project {name}: write a script, run it, commit it, then change and rerun.",
             setup="git config --global user.name 'Dev User' && git config --global user.email dev@example.com "
                   "&& git config --global init.defaultBranch main\n",
             category="session", actions=[
                 cmd(f"mkdir {name} && cd {name}"), cmd(f"printf 'for i in range({n}):\\n    print(i * i)\\n' > squares.py"),
                 cmd("python3 squares.py"), cmd("git init -q && git add . && git commit -qm 'Add squares' && git log --oneline"),
                 cmd("sed -i 's/i \\* i/i ** 3/' squares.py && python3 squares.py"), cmd("git diff --stat"),
                 cmd("git commit -qam 'Cubes instead' && git log --oneline | wc -l"), cmd("cd .. && ls")])


@add("session-data-pipeline", "session")
def session_data(rng: random.Random) -> T:
    rows = csv_rows(rng, 12)
    body = "name,city,amount\n" + "".join(f"{n},{c},{a}\n" for n, c, a in rows)
    return T("session-data-pipeline", "Clean the raw CSV, summarize it, and archive the results.",
             files={"raw/sales.csv": body}, category="session", actions=[
                 cmd("mkdir -p out && tail -n +2 raw/sales.csv | sort -t, -k3 -n > out/sorted.csv"),
                 cmd("head -n 3 out/sorted.csv"),
                 cmd("awk -F, '{s[$2]+=$3} END {for (c in s) print c, s[c]}' out/sorted.csv | sort > out/by_city.txt"),
                 cmd("cat out/by_city.txt"), cmd("wc -l out/*"), cmd("tar -czf results.tgz out && tar -tzf results.tgz"),
                 cmd("rm -r out && ls")])


@add("session-debug-service", "session")
def session_service(rng: random.Random) -> T:
    port = rng.randrange(8000, 9000)
    server = (f"import http.server, socketserver\nPORT = {port}\n"
              "with socketserver.TCPServer(('127.0.0.1', PORT), http.server.SimpleHTTPRequestHandler) as s:\n"
              "    print('serving on', PORT, flush=True)\n    s.serve_forever()\n")
    return T("session-debug-service", "Start the local web server, query it, then shut it down cleanly.",
             files={"serve.py": server, "index.html": f"<h1>{rng.choice(PROJECTS)}</h1>\n"}, category="session", actions=[
                 cmd("python3 serve.py > server.log 2>&1 &"), keys(("", 1.0)), cmd("cat server.log"),
                 cmd(f"curl -s http://127.0.0.1:{port}/index.html"), cmd(f"curl -s -o /dev/null -w '%{{http_code}}\\n' http://127.0.0.1:{port}/missing"),
                 cmd("kill %1; wait; echo stopped"), cmd("tail -n 2 server.log")])


@add("session-users-report", "session")
def session_users(rng: random.Random) -> T:
    users = rng.sample(NAMES, 3)
    return T("session-users-report", "Create several users, write a report of their home folders and clean up.",
             category="session", capabilities=USER_ADMIN_CAPABILITIES, actions=[
                 cmd("for u in " + " ".join(users) + "; do useradd -m $u; done"),
                 cmd("getent passwd " + " ".join(users) + " | cut -d: -f1,3,6"), cmd("ls -l /home"),
                 cmd("for u in " + " ".join(users) + "; do echo \"$u $(stat -c %U /home/$u)\"; done > report.txt"),
                 cmd("cat report.txt"), cmd(f"userdel -r {users[0]} && ls /home")])


@add("session-cities-files", "session")
def session_cities(rng: random.Random) -> T:
    cities = rng.sample(CITIES, 4)
    return T("session-cities-files", "Create a folder per city, put a note in each, then find and count them.",
             category="session", actions=[
                 cmd("mkdir trips && cd trips"), cmd("for c in " + " ".join(cities) + "; do mkdir $c; echo \"visit $c\" > $c/note.txt; done"),
                 cmd("ls"), cmd("cat */note.txt"), cmd(f"rm -r {cities[0]} && ls | wc -l"), cmd("grep -r visit . | sort")])
