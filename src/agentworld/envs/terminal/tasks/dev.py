"""Developer work: git, Python scripts and tracebacks, C builds with make and gcc."""

from __future__ import annotations

import random

from agentworld.envs.terminal.task import TerminalTask, cmd
from agentworld.envs.terminal.tasks import TEMPLATES
from agentworld.envs.terminal.tasks._words import FRUITS, NAMES, PROJECTS, ident

T = TerminalTask
add = TEMPLATES.add

GIT_ID = "git config --global user.name 'Dev User' && git config --global user.email dev@example.com && " \
         "git config --global init.defaultBranch main && git config --global advice.detachedHead false\n"


@add("git-first-commit", "git")
def git_first_commit(rng: random.Random) -> T:
    name = ident(rng)
    return T("git-first-commit", f"Turn the {name} folder into a git repository and make the first commit.",
             files={f"{name}/README.md": f"# {name}\n", f"{name}/main.py": "print('hello')\n"}, setup=GIT_ID,
             category="git", actions=[
                 cmd(f"cd {name}"), cmd("git init"), cmd("git status"), cmd("git add ."),
                 cmd("git commit -m 'Initial commit'"), cmd("git log --oneline")])


@add("git-branch-merge", "git")
def git_branch_merge(rng: random.Random) -> T:
    br = f"feature/{rng.choice(FRUITS)}"
    setup = GIT_ID + "cd /workspace/app && git init -q && git add . && git commit -qm 'Initial import'\n"
    return T("git-branch-merge", f"Create branch {br}, add a change there and merge it into main.",
             files={"app/app.py": "VERSION = 1\n"}, setup=setup, category="git", actions=[
                 cmd("cd app && git branch"), cmd(f"git checkout -b {br}"),
                 cmd("echo 'VERSION = 2' > app.py && git commit -am 'Bump version'"),
                 cmd("git checkout main"), cmd(f"git merge {br}"), cmd("git log --oneline --graph"), cmd("cat app.py")])


@add("git-conflict", "git")
def git_conflict(rng: random.Random) -> T:
    a, b = rng.sample(FRUITS, 2)
    setup = GIT_ID + (
        "cd /workspace/repo && git init -q && git add . && git commit -qm base && "
        f"git checkout -qb other && echo 'favorite={b}' > pref.txt && git commit -qam 'Prefer {b}' && "
        f"git checkout -q main && echo 'favorite={a}' > pref.txt && git commit -qam 'Prefer {a}'\n")
    return T("git-conflict", "Merge branch other into main and resolve the conflict in pref.txt.",
             files={"repo/pref.txt": "favorite=none\n"}, setup=setup, category="git", actions=[
                 cmd("cd repo && git log --oneline --all"), cmd("git merge other"), cmd("git status --short"),
                 cmd("cat pref.txt"), cmd(f"echo 'favorite={a}' > pref.txt && git add pref.txt"),
                 cmd("git commit -m 'Merge other'"), cmd("git log --oneline | head -n 3")])


@add("git-diff-stash", "git")
def git_diff_stash(rng: random.Random) -> T:
    setup = GIT_ID + "cd /workspace/svc && git init -q && git add . && git commit -qm 'Add service'\n"
    return T("git-diff-stash", "Inspect uncommitted changes, stash them, and bring them back.",
             files={"svc/config.yml": f"workers: {rng.randrange(1, 8)}\n"}, setup=setup, category="git", actions=[
                 cmd("cd svc && echo 'timeout: 30' >> config.yml"), cmd("git diff"), cmd("git stash"),
                 cmd("git status --short; cat config.yml"), cmd("git stash list"), cmd("git stash pop"),
                 cmd("git diff --stat")])


@add("git-history", "git")
def git_history(rng: random.Random) -> T:
    n = rng.randrange(3, 6)
    commits = "".join(f"echo step{i} >> log.txt && git add . && git commit -qm 'Step {i}: {rng.choice(FRUITS)}' && "
                      for i in range(1, n + 1))
    setup = GIT_ID + f"cd /workspace/hist && git init -q && {commits} git tag v{n}.0\n"
    return T("git-history", "Find which commit added step2 to log.txt and show the tags.",
             setup=setup, files={"hist/.keep": ""}, category="git", actions=[
                 cmd("cd hist && git log --oneline"), cmd("git log -S step2 --oneline"), cmd("git tag"),
                 cmd("git show --stat HEAD | head -n 8"), cmd("git blame log.txt | cut -c1-30")])


@add("python-script", "python")
def python_script(rng: random.Random) -> T:
    nums = [rng.randrange(1, 100) for _ in range(rng.randrange(5, 10))]
    script = ("import sys\n\nnums = [int(x) for x in sys.argv[1:]]\n"
              "print('count', len(nums))\nprint('mean', sum(nums) / len(nums))\nprint('max', max(nums))\n")
    return T("python-script", "Run stats.py on some numbers, then find what happens with no arguments.",
             files={"stats.py": script}, category="python", actions=[
                 cmd("cat stats.py"), cmd("python3 stats.py " + " ".join(map(str, nums))),
                 cmd("python3 stats.py"), cmd("python3 stats.py 1 two 3")])


@add("python-traceback", "python")
def python_traceback(rng: random.Random) -> T:
    key = rng.choice(["timeout", "retries", "region"])
    src = ("import json\n\n\ndef load(path):\n    with open(path) as fh:\n        return json.load(fh)\n\n\n"
           f"cfg = load('settings.json')\nprint('value:', cfg['{key}'])\n")
    return T("python-traceback", "app.py crashes; read the traceback and fix the configuration until it runs.",
             files={"app.py": src}, category="python", actions=[
                 cmd("python3 app.py"), cmd("echo '{\"name\": \"demo\",}' > settings.json && python3 app.py"),
                 cmd("echo '{\"name\": \"demo\"}' > settings.json && python3 app.py"),
                 cmd(f"echo '{{\"name\": \"demo\", \"{key}\": 5}}' > settings.json && python3 app.py")])


@add("python-module-error", "python")
def python_module_error(rng: random.Random) -> T:
    mod = rng.choice(["requests", "numpy", "yaml", "flask"])
    return T("python-module-error", f"Run fetch.py, which needs the {mod} module, and see what can be done offline.",
             files={"fetch.py": f"import {mod}\nprint({mod}.__name__)\n"}, category="python", actions=[
                 cmd("python3 fetch.py"), cmd(f"pip3 show {mod}"), cmd("pip3 list 2>/dev/null | head -n 8"),
                 cmd(f"pip3 install --quiet --retries 0 --timeout 1 {mod}", 20)])


@add("python-tests", "python")
def python_tests(rng: random.Random) -> T:
    a, b = rng.randrange(2, 9), rng.randrange(2, 9)
    files = {"calc.py": "def add(a, b):\n    return a - b\n",
             "test_calc.py": f"import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                             f"    def test_add(self):\n        self.assertEqual(add({a}, {b}), {a + b})\n\n\n"
                             "if __name__ == '__main__':\n    unittest.main()\n"}
    # No bytecode cache: a same-size edit within the second of the first run would leave a
    # stale calc.pyc in charge, and the recorded outcome would depend on the host's speed.
    return T("python-tests", "Run the unit tests, find the bug in calc.py and fix it.",
             files=files, env={"PYTHONDONTWRITEBYTECODE": "1"}, category="python", actions=[
                 cmd("python3 -m unittest -v", 5), cmd("cat calc.py"), cmd("sed -i 's/a - b/a + b/' calc.py"),
                 cmd("python3 -m unittest -v", 5)])


@add("gcc-compile", "build")
def gcc_compile(rng: random.Random) -> T:
    n = rng.randrange(5, 12)
    src = ('#include <stdio.h>\n\nint main(void) {\n    long f = 1;\n'
           f'    for (int i = 2; i <= {n}; i++) f *= i;\n    printf("{n}! = %ld\\n", f);\n    return 0\n}}\n')
    return T("gcc-compile", "Compile fact.c with gcc and run it; fix any compiler errors.",
             files={"fact.c": src}, category="build", actions=[
                 cmd("gcc -Wall -o fact fact.c", 10), cmd("sed -i 's/return 0$/return 0;/' fact.c"),
                 cmd("gcc -Wall -o fact fact.c", 10), cmd("./fact"), cmd("file fact | cut -d, -f1,2")])


@add("make-build", "build")
def make_build(rng: random.Random) -> T:
    prog = rng.choice(PROJECTS)
    files = {"Makefile": f"CC=gcc\nCFLAGS=-Wall -O2\n\n{prog}: main.o util.o\n\t$(CC) $(CFLAGS) -o $@ $^\n\n"
                         f"%.o: %.c\n\t$(CC) $(CFLAGS) -c $<\n\nclean:\n\trm -f *.o {prog}\n",
             "main.c": '#include <stdio.h>\nint twice(int);\nint main(void) { printf("%d\\n", twice('
                       f'{rng.randrange(2, 50)})); return 0; }}\n',
             "util.c": "int twice(int x) { return 2 * x; }\n"}
    return T("make-build", f"Build {prog} with make, run it, rebuild after a change and clean up.",
             files=files, category="build", actions=[
                 cmd("make", 15), cmd(f"./{prog}"), cmd("make", 5), cmd("touch util.c && make", 15),
                 cmd("make clean && ls")])


@add("c-segfault", "build")
def c_segfault(rng: random.Random) -> T:
    src = ('#include <stdio.h>\n#include <string.h>\n\nint main(int argc, char **argv) {\n'
           '    printf("length: %zu\\n", strlen(argv[1]));\n    return 0;\n}\n')
    return T("c-segfault", "The program crashes when run without arguments; show the crash and its exit code.",
             files={"len.c": src}, category="build", actions=[
                 cmd("gcc -g -o len len.c", 10), cmd(f"./len {rng.choice(NAMES)}"), cmd("./len"),
                 cmd("echo exit code $?")])


@add("make-missing-target", "build")
def make_missing(rng: random.Random) -> T:
    files = {"Makefile": "all: app\n\napp: app.c\n\tgcc -o app app.c\n\ntest: app\n\t./app --selftest\n",
             "app.c": f'#include <stdio.h>\nint main(void) {{ puts("{rng.choice(FRUITS)} ok"); return 0; }}\n'}
    return T("make-missing-target", "Run the project's make targets and see which ones exist.",
             files=files, category="build", actions=[
                 cmd("make install", 5), cmd("make -n", 5), cmd("make test", 15), cmd("make", 5)])
