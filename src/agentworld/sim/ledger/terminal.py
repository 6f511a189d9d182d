"""The ledger for shells (terminal domain): files, deletions, cwd, environment variables.

What an action did is read by the domain (:func:`agentworld.domains.terminal.effects`);
this applies it to the session's state. Checks only fire where the output is determined:
``cat`` of a written file, ``echo $VAR``, ``pwd``, the prompt's directory, and listings.
"""

from __future__ import annotations

import posixpath
import re

from agentworld.domains.effects import Effects
from agentworld.domains.terminal import effects, typed_text
from agentworld.domains.terminal.effects import NO_SUCH
from agentworld.domains.terminal.screen import PROMPT_LINE, PROMPT_START, first_prompt_dir
from agentworld.domains.terminal.sed import apply_sed
from agentworld.domains.terminal.shell import commands, expand, redirect
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState


def apply(state: LedgerState, found: Effects) -> None:
    """Record the effects of one accepted action (paths resolved against the working
    directory as it is when each effect happens). A later fact replaces an earlier one;
    an effect not read exactly drops what was known (never leaves it stale)."""
    for op in found.ops:
        if op.kind == "write":
            state.write(op.target, op.value, append=op.append)
        elif op.kind == "cd":
            state.cwd = op.target if op.target.startswith("~") else state.abspath(op.target)
        elif op.kind == "setenv":
            state.env[op.target] = op.value
        elif op.kind == "unsetenv":
            state.env.pop(op.target, None)
        elif op.kind == "delete":
            state.delete(op.target)
        elif op.kind == "unknown":
            state.forget(op.target)
        elif op.kind == "mkdir":
            p = state.abspath(op.target)
            state.dirs += [] if p in state.dirs else [p]
            state.deleted = [d for d in state.deleted if d != p]
        elif op.kind == "touch" and state.abspath(op.target) not in state.files:
            state.write(op.target, "")
        elif op.kind == "sed" and (p := state.abspath(op.target)) in state.files:
            edited = apply_sed(op.value, state.files[p], ere=op.source == "-E")
            if edited is None:
                state.forget(p)
            else:
                state.files[p] = edited
        elif op.kind in ("copy", "move"):
            _copy(state, op.source, op.target, move=op.kind == "move")


def _copy(state: LedgerState, source: str, target: str, *, move: bool) -> None:
    """``cp``/``mv``: known files (a directory's known files) land at the destination;
    what the destination held but the source did not say is unknown."""
    src, dst = state.abspath(source), state.abspath(target)
    if target.endswith("/") or dst in state.dirs:
        dst = posixpath.join(dst, posixpath.basename(src))
    below = src.rstrip("/") + "/"
    known = {p: c for p, c in state.files.items() if p == src or p.startswith(below)}
    state.forget(dst)
    for p, content in known.items():
        state.write(dst + p[len(src):], content)
    if move:
        state.delete(src)


class ShellLedger(LedgerRules):
    def update(self, state: LedgerState, action: str, observation: str) -> None:
        if state.cwd is None and (first := first_prompt_dir(observation)) and not first.startswith("~"):
            state.cwd = first
        # A failed command (the screen says so) records nothing but the prompt.
        apply(state, effects(action, observation, env=state.env))
        self._learn_prompt(state, observation)

    @staticmethod
    def _learn_prompt(state: LedgerState, observation: str) -> None:
        m = list(PROMPT_LINE.finditer(observation))
        if m and not m[-1].group("dir").startswith("~"):
            state.cwd = m[-1].group("dir")

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        found: list[Conflict] = []
        cmds = commands(action)
        for argv, _ in cmds:
            argv = [expand(w, state.env) for w in argv]
            words, target, _ = redirect(argv)
            if target or not words:
                continue
            cmd, args = words[0], [w for w in words[1:] if not w.startswith("-")]
            if cmd == "cat" and len(cmds) == 1:
                for a in args:
                    found.extend(self._check_cat(state, state.abspath(a), observation))
            elif cmd == "pwd" and len(cmds) == 1 and state.cwd and not state.cwd.startswith("~"):
                found.extend(self._check_pwd(state.cwd, observation))
            elif cmd == "ls" and len(cmds) == 1 and len(args) <= 1:
                found.extend(self._check_ls(state, state.abspath(args[0] if args else "."), observation))
        # `echo $VAR` where VAR is known: the value must be printed.
        raw = typed_text(action).strip()
        m = re.fullmatch(r"echo \"?\$\{?(\w+)\}?\"?", raw)
        if m and m.group(1) in state.env and state.env[m.group(1)] not in observation:
            found.append(Conflict(kind="env_var", key=m.group(1), expected=state.env[m.group(1)]))
        prompts = list(PROMPT_LINE.finditer(observation))
        only_cd = all(a[0] == "cd" for a, _ in cmds) if cmds else False
        if prompts and state.cwd and not state.cwd.startswith("~") and not only_cd and not any(a[0] in ("cd", "pushd", "popd", "su", "ssh", "exit") for a, _ in cmds):
            shown = prompts[-1].group("dir")
            if not shown.startswith("~") and shown != state.cwd:
                found.append(Conflict(kind="cwd", key="prompt", expected=state.cwd, detail=f"prompt shows {shown}"))
        return found

    @staticmethod
    def _check_pwd(cwd: str, observation: str) -> list[Conflict]:
        """``pwd`` prints the directory on a line of its own: read the output lines, not the
        prompts (which always name the directory, so the whole screen proves nothing)."""
        output = [ln.strip() for ln in observation.splitlines() if not PROMPT_START.match(ln.strip())]
        if not any(output) or cwd in output:
            return []  # no output yet (still running, or cut off): nothing to compare
        shown = next(ln for ln in output if ln)
        return [Conflict(kind="cwd", key="pwd", expected=cwd, detail=f"pwd shows {shown}")]

    @staticmethod
    def _check_cat(state: LedgerState, path: str, observation: str) -> list[Conflict]:
        if path in state.files:
            if NO_SUCH.search(observation):
                return [Conflict(kind="missing_file", key=path, expected="exists", detail="written earlier but reported missing")]
            missing = [ln for ln in state.files[path].splitlines() if ln.strip() and ln.strip() not in observation]
            if missing:
                return [Conflict(kind="file_content", key=path, expected=state.files[path][:200], detail=f"{len(missing)} written line(s) absent")]
        elif path in state.deleted and not NO_SUCH.search(observation):
            return [Conflict(kind="deleted_path", key=path, expected="No such file or directory")]
        return []

    @staticmethod
    def _check_ls(state: LedgerState, directory: str, observation: str) -> list[Conflict]:
        if NO_SUCH.search(observation):
            return []
        shown = set(re.findall(r"[^\s/]+", observation))
        found = []
        for path in state.files:
            if posixpath.dirname(path) == directory and posixpath.basename(path) not in shown:
                found.append(Conflict(kind="missing_file", key=path, expected="listed", detail="written earlier but not listed"))
        for path in state.deleted:
            name = posixpath.basename(path)
            if posixpath.dirname(path) == directory and name in shown and path not in state.files:
                found.append(Conflict(kind="deleted_path", key=path, expected="not listed", detail="deleted earlier but listed"))
        return found
