"""System administration: packages, permissions, users, environment, processes, errors."""

from __future__ import annotations

import random

from agentworld.envs.sandbox.sandbox import USER_ADMIN_CAPABILITIES
from agentworld.envs.terminal.task import TerminalTask, cmd, keys
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import CITIES, FRUITS, NAMES, PROJECTS, SERVICES, ident

T = TerminalTask
add = TEMPLATES.add


@add("package-query", "packages")
def package_query(rng: random.Random) -> T:
    pkg = rng.choice(["git", "make", "jq", "curl", "less", "nano", "zip", "bc", "tree"])
    return T("package-query", f"Find out which version of {pkg} is installed, what it provides and how big it is.",
             category="packages", actions=[
                 cmd(f"dpkg -l {pkg} | tail -n 1"), cmd(f"dpkg -s {pkg} | grep -E '^(Version|Installed-Size|Depends)'"),
                 cmd(f"dpkg -L {pkg} | grep bin/"), cmd(f"which {pkg} && {pkg} --version 2>&1 | head -n 1"),
                 cmd("dpkg -l | grep -c '^ii'")])


@add("package-owner", "packages")
def package_owner(rng: random.Random) -> T:
    path = rng.choice(["/usr/bin/awk", "/bin/ls", "/usr/bin/python3", "/usr/bin/xz", "/usr/bin/sqlite3"])
    return T("package-owner", f"Which package owns {path}, and is it a symlink?",
             category="packages", actions=[
                 cmd(f"ls -l {path}"), cmd(f"readlink -f {path}"), cmd(f"dpkg -S $(readlink -f {path})"),
                 cmd("apt-cache policy coreutils | head -n 3")])


@add("apt-offline", "packages")
def apt_offline(rng: random.Random) -> T:
    pkg = rng.choice(["htop", "ripgrep", "nginx", "redis-server"])
    return T("apt-offline", f"Try to install {pkg}; the machine has no network, so report what happens.",
             category="packages", actions=[
                 cmd(f"which {pkg} || echo not installed"), cmd(f"apt-get install -y {pkg}", 40),
                 cmd("apt-get update", 40), cmd(f"apt-cache search {pkg} | head -n 3")])


@add("chmod-script", "permissions")
def chmod_script(rng: random.Random) -> T:
    name = f"{rng.choice(['deploy', 'backup', 'cleanup', 'report'])}.sh"
    body = f"#!/bin/bash\necho \"running {name} for {rng.choice(PROJECTS)}\"\n"
    return T("chmod-script", f"Run ./{name}; fix the permission problem.",
             files={name: body}, category="permissions", actions=[
                 cmd(f"./{name}"), cmd(f"ls -l {name}"), cmd(f"chmod +x {name}"), cmd(f"ls -l {name}"), cmd(f"./{name}")])


@add("users-ownership", "permissions")
def users_ownership(rng: random.Random) -> T:
    user = rng.choice(NAMES)
    return T("users-ownership", f"Create user {user}, give them a private project folder and check access.",
             files={"shared/plan.txt": "draft\n"}, category="permissions",
             capabilities=USER_ADMIN_CAPABILITIES, actions=[
                 cmd(f"useradd -m {user}"), cmd(f"id {user}"),
                 cmd(f"mkdir /srv/{user} && chown {user}:{user} /srv/{user} && chmod 700 /srv/{user}"),
                 cmd(f"ls -ld /srv/{user}"), cmd(f"su {user} -c 'touch /srv/{user}/ok && ls /srv/{user}'"),
                 cmd(f"su {user} -c 'echo hi > /workspace/shared/plan.txt'")])


@add("umask-modes", "permissions")
def umask_modes(rng: random.Random) -> T:
    mask = rng.choice(["022", "027", "077"])
    return T("umask-modes", f"Show how umask {mask} changes the mode of new files and directories.",
             category="permissions", actions=[
                 cmd("umask"), cmd(f"umask {mask}"), cmd("touch f1 && mkdir d1"), cmd("stat -c '%A %a %n' f1 d1"),
                 cmd("chmod u=rw,g=r,o= f1 && stat -c '%a' f1")])


@add("env-vars", "environment")
def env_vars(rng: random.Random) -> T:
    var = rng.choice(["APP_ENV", "DATABASE_URL", "LOG_LEVEL"])
    val = {"APP_ENV": "staging", "DATABASE_URL": f"postgres://db:5432/{rng.choice(PROJECTS)}",
           "LOG_LEVEL": "debug"}[var]
    script = f"#!/bin/bash\necho \"{var} is ${{{var}:-unset}}\"\n"
    return T("env-vars", f"The script reads {var}; make it visible to child processes.",
             files={"show.sh": script}, modes={"show.sh": 0o755}, category="environment", actions=[
                 cmd("./show.sh"), cmd(f"{var}={val}"), cmd("./show.sh"), cmd(f"export {var}"), cmd("./show.sh"),
                 cmd(f"env | grep {var}"), cmd(f"unset {var}; echo \"[${var}]\"")])


@add("path-variable", "environment")
def path_variable(rng: random.Random) -> T:
    tool = f"{rng.choice(PROJECTS)}ctl"
    return T("path-variable", f"Make the {tool} tool in ~/bin runnable by name.",
             files={f"/root/bin/{tool}": f"#!/bin/sh\necho '{tool} version {rng.randrange(1, 5)}.{rng.randrange(10)}'\n"},
             modes={f"/root/bin/{tool}": 0o755}, category="environment", actions=[
                 cmd(tool), cmd("echo $PATH"), cmd('export PATH="$HOME/bin:$PATH"'), cmd(f"which {tool}"), cmd(tool)])


@add("preset-env", "environment")
def preset_env(rng: random.Random) -> T:
    region = rng.choice(CITIES).lower()
    return T("preset-env", "Check how this machine's shell environment is configured.",
             env={"DEPLOY_REGION": region, "RETRIES": str(rng.randrange(1, 6))}, category="environment", actions=[
                 cmd("echo $DEPLOY_REGION $RETRIES"), cmd("printenv | sort | head -n 12"),
                 cmd("echo $HOME $SHELL $TERM"), cmd("echo $((RETRIES * 2))")])


@add("background-jobs", "processes")
def background_jobs(rng: random.Random) -> T:
    n = rng.randrange(20, 60)
    return T("background-jobs", "Start a long job in the background, check on it, then stop it.",
             category="processes", actions=[
                 cmd(f"sleep {n} & echo \"started $!\""), cmd("jobs -l"), cmd("(sleep 1; echo worker done) &"),
                 keys(("", 1.5)), cmd("kill %1"), cmd("jobs; echo listed"), cmd("wait; echo all finished")])


@add("ps-kill", "processes")
def ps_kill(rng: random.Random) -> T:
    svc = rng.choice(SERVICES)
    script = "#!/bin/bash\nwhile true; do sleep 1; done\n"
    return T("ps-kill", f"A runaway {svc}-worker process is running; find it and kill it.",
             files={f"{svc}-worker": script}, modes={f"{svc}-worker": 0o755}, category="processes", actions=[
                 cmd(f"nohup ./{svc}-worker > /dev/null 2>&1 &"), cmd("ps aux | grep -v grep | grep worker"),
                 cmd(f"pgrep -f {svc}-worker"), cmd(f"pkill -f {svc}-worker; sleep 0.5; pgrep -f {svc}-worker || echo gone")])


@add("ctrl-c-timeout", "processes")
def ctrl_c_timeout(rng: random.Random) -> T:
    return T("ctrl-c-timeout", "A command hangs; interrupt it and run it again with a time limit.",
             category="processes", actions=[
                 cmd("cat", 1), keys(("typed into cat\n", 0.5)), keys(("C-c", 1)),
                 cmd(f"timeout {rng.randrange(1, 3)} sleep 10; echo exit=$?", 5), cmd("yes | head -n 3")])


@add("common-errors", "errors")
def common_errors(rng: random.Random) -> T:
    missing = f"{rng.choice(FRUITS)}.txt"
    return T("common-errors", "Explore what the usual shell mistakes look like on this machine.",
             category="errors", actions=[
                 cmd(f"cat {missing}"), cmd("cd /nonexistent"), cmd("sl"), cmd("mkdir /workspace"),
                 cmd("rm /etc"), cmd("echo 'unterminated"), keys(("'\n", 1)), cmd("ls -z")])


@add("network-down", "errors")
def network_down(rng: random.Random) -> T:
    host = rng.choice(["example.com", "pypi.org", "github.com", "deb.debian.org"])
    return T("network-down", f"Check whether {host} is reachable from this machine.",
             category="errors", actions=[
                 cmd(f"curl -sS -m 5 https://{host}", 8), cmd("ping -c 1 -W 1 8.8.8.8", 5),
                 cmd("ip -br addr"), cmd("cat /etc/resolv.conf; echo \"lines: $(wc -l < /etc/resolv.conf)\""),
                 cmd(f"wget -q -T 2 -t 1 http://{host}/ ; echo rc=$?", 6)])


@add("disk-full-file-limit", "errors")
def disk_limit(rng: random.Random) -> T:
    return T("disk-full-file-limit", "Create a large scratch file and see what limits apply.",
             category="errors", actions=[
                 cmd("df -h / | tail -n 1"), cmd(f"head -c {rng.randrange(5, 40)}M /dev/zero > scratch.bin && ls -lh scratch.bin"),
                 cmd("ulimit -f"), cmd("rm scratch.bin && df -h / | tail -n 1")])


@add("cron-like-loop", "processes")
def logger_loop(rng: random.Random) -> T:
    tag = ident(rng)
    return T("cron-like-loop", "Run a small periodic logger in the background and read its output.",
             category="processes", actions=[
                 cmd(f"(for i in 1 2 3; do echo \"$i {tag}\" >> beat.log; sleep 0.4; done) &"),
                 keys(("", 2.0)), cmd("cat beat.log"), cmd("wc -l beat.log"), cmd("jobs")])
