"""Ledger rules for shells (terminal domain): files, deletions, cwd, environment variables.

Commands are read from the keystrokes with ``shlex``; only forms whose effect is certain
are recorded (``cd``, ``export``, ``echo``/``printf`` redirects, here-documents, ``rm``,
``mkdir``, ``touch``, ``cp``, ``mv``). Checks only fire where the output is determined:
``cat`` of a written file, ``echo $VAR``, ``pwd``, the prompt's directory, and listings.
"""

from __future__ import annotations

import json
import posixpath
import re

from agentworld.sim.ledger.base import Conflict, DomainRules, LedgerState

_CONTROL = re.compile(r"^C-[a-z]$")
_PROMPT = re.compile(r"^[\w.-]+@[\w.-]+:(?P<dir>[^\s#$]+)[#$] ?$", re.MULTILINE)
# A prompt with a command typed after it: tells the directory the command ran in.
_PROMPT_PREFIX = re.compile(r"^[\w.-]+@[\w.-]+:(?P<dir>[^\s#$]+)[#$]( |$)", re.MULTILINE)
_HEREDOC = re.compile(r"^(?P<cmd>.*?)<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)(?P<rest>.*)$")
# Output that says the command's effect did not happen.
_FAILED = re.compile(r"permission denied|no space left|read-only file system|no such file|cannot|not found", re.IGNORECASE)
_NO_SUCH = re.compile(r"no such file or directory", re.IGNORECASE)
_VAR = re.compile(r"\$(\w+)|\$\{(\w+)\}")
# One piece of a shell word per match; every branch consumes input, so splitting is linear.
_PIECE = re.compile(r"""(?P<ws>\s+)|'(?P<sq>[^']*)'|"(?P<dq>(?:[^"\\]|\\.)*)"|\\(?P<esc>.)|(?P<plain>[^\s'"\\]+)""", re.S)
_DQ_ESCAPE = re.compile(r"""\\([\\"$`])""")


def split_words(line: str) -> list[str] | None:
    """``line`` split into words the way a POSIX shell reads them (quotes, backslashes, a
    ``#`` comment at the start of a word), in time linear in the line; None when a quote or
    a backslash is left open. ``shlex.split`` does the same in quadratic time, which let one
    large action stall the simulator."""
    words: list[str] = []
    parts: list[str] = []
    in_word = False
    pos, end = 0, len(line)
    while pos < end:
        m = _PIECE.match(line, pos)
        if m is None:
            return None  # an open quote or a trailing backslash
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            if in_word:
                words.append("".join(parts))
                parts, in_word = [], False
            continue
        if kind == "plain" and not in_word and m.group("plain").startswith("#"):
            break  # a comment runs to the end of the line
        in_word = True
        if kind == "dq":
            parts.append(_DQ_ESCAPE.sub(r"\1", m.group("dq")))
        else:
            parts.append(m.group(kind or "plain"))
    if in_word:
        words.append("".join(parts))
    return words


def keystrokes_text(action: str) -> str:
    """The typed text of a terminal action (JSON keystroke batches or plain text)."""
    try:
        data = json.loads(action)
    except (json.JSONDecodeError, TypeError):
        return action
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return action
    parts = []
    for item in data:
        keys = item.get("keystrokes", "") if isinstance(item, dict) else str(item)
        if not _CONTROL.match(keys.strip()):
            parts.append(keys)
    return "".join(parts)


#: the typed text the ledger reads per action; what follows (whole lines past it) counts as
#: unknown, so one huge action costs a bounded amount of parsing
MAX_PARSE_CHARS = 1 << 15


def commands(action: str) -> list[tuple[list[str], str | None]]:
    """Simple commands of the typed lines as ``(argv, heredoc_body)``; unparsable lines skipped.
    Only the whole lines within the first :data:`MAX_PARSE_CHARS` characters are read."""
    text = keystrokes_text(action)
    cut = len(text) > MAX_PARSE_CHARS
    if cut:
        text = text[: text.rfind("\n", 0, MAX_PARSE_CHARS) + 1]
    lines = text.split("\n")
    out: list[tuple[list[str], str | None]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        body = None
        m = _HEREDOC.match(line)
        if m:
            tag, collected = m.group("tag"), []
            while i < len(lines) and lines[i].strip() != tag:
                collected.append(lines[i])
                i += 1
            if cut and i >= len(lines):
                break  # the body runs past what was read: its content is unknown
            i += 1
            body = "\n".join(collected) + "\n"
            line = m.group("cmd") + m.group("rest")
        for part in re.split(r"&&|\|\||;", line):
            argv = split_words(part)
            if argv:
                out.append((argv, body))
    return out


def _expand(word: str, env: dict[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), word)


def _redirect(argv: list[str]) -> tuple[list[str], str | None, bool]:
    """Split ``argv`` at an output redirect: ``(words, target, append)``."""
    for j, w in enumerate(argv):
        if w in (">", ">>") and j + 1 < len(argv):
            return argv[:j], argv[j + 1], w == ">>"
        if w.startswith(">>") or w.startswith(">"):
            op = ">>" if w.startswith(">>") else ">"
            return argv[:j], w[len(op):], op == ">>"
    return argv, None, False


class TerminalRules(DomainRules):
    def update(self, state: LedgerState, action: str, observation: str) -> None:
        if state.cwd is None and (first := _PROMPT_PREFIX.search(observation)) and not first.group("dir").startswith("~"):
            state.cwd = first.group("dir")
        if _FAILED.search(observation):
            # Which of several commands failed is unknowable; record nothing but the prompt.
            self._learn_prompt(state, observation)
            return
        for argv, heredoc in commands(action):
            argv = [_expand(w, state.env) for w in argv]
            words, target, append = _redirect(argv)
            cmd = words[0] if words else ""
            if target and target != "/dev/null":
                if cmd == "echo":
                    args = [w for w in words[1:] if w != "-e"]
                    newline = "-n" not in args
                    state.write(target, " ".join(a for a in args if a != "-n") + ("\n" if newline else ""), append=append)
                elif cmd == "printf" and len(words) > 1:
                    state.write(target, words[1].replace("\\n", "\n"), append=append)
                elif cmd == "cat" and heredoc is not None:
                    state.write(target, heredoc, append=append)
                continue
            if cmd == "cd":
                dest = words[1] if len(words) > 1 else "~"
                if dest != "-":
                    state.cwd = dest if dest.startswith("~") else state.abspath(dest)
            elif cmd == "export":
                for w in words[1:]:
                    if "=" in w:
                        k, v = w.split("=", 1)
                        state.env[k] = v
            elif cmd == "unset":
                for w in words[1:]:
                    state.env.pop(w, None)
            elif cmd == "rm":
                for w in words[1:]:
                    if not w.startswith("-"):
                        state.delete(w)
            elif cmd == "mkdir":
                for w in words[1:]:
                    if not w.startswith("-") and (p := state.abspath(w)) not in state.dirs:
                        state.dirs.append(p)
            elif cmd == "touch":
                for w in words[1:]:
                    if not w.startswith("-") and state.abspath(w) not in state.files:
                        state.write(w, "")
            elif cmd in ("cp", "mv") and len(words) == 3:
                src, dst = state.abspath(words[1]), state.abspath(words[2])
                if dst in state.dirs:
                    dst = posixpath.join(dst, posixpath.basename(src))
                if src in state.files:
                    state.write(dst, state.files[src])
                    if cmd == "mv":
                        state.delete(src)
        self._learn_prompt(state, observation)

    @staticmethod
    def _learn_prompt(state: LedgerState, observation: str) -> None:
        m = list(_PROMPT.finditer(observation))
        if m and not m[-1].group("dir").startswith("~"):
            state.cwd = m[-1].group("dir")

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        found: list[Conflict] = []
        cmds = commands(action)
        for argv, _ in cmds:
            argv = [_expand(w, state.env) for w in argv]
            words, target, _ = _redirect(argv)
            if target or not words:
                continue
            cmd, args = words[0], [w for w in words[1:] if not w.startswith("-")]
            if cmd == "cat" and len(cmds) == 1:
                for a in args:
                    found.extend(self._check_cat(state, state.abspath(a), observation))
            elif cmd == "pwd" and state.cwd and not state.cwd.startswith("~") and state.cwd not in observation:
                found.append(Conflict(kind="cwd", key="pwd", expected=state.cwd, detail="pwd shows another directory"))
            elif cmd == "ls" and len(cmds) == 1 and len(args) <= 1:
                found.extend(self._check_ls(state, state.abspath(args[0] if args else "."), observation))
        # `echo $VAR` where VAR is known: the value must be printed.
        raw = keystrokes_text(action).strip()
        m = re.fullmatch(r"echo \"?\$\{?(\w+)\}?\"?", raw)
        if m and m.group(1) in state.env and state.env[m.group(1)] not in observation:
            found.append(Conflict(kind="env_var", key=m.group(1), expected=state.env[m.group(1)]))
        prompts = list(_PROMPT.finditer(observation))
        only_cd = all(a[0] == "cd" for a, _ in cmds) if cmds else False
        if prompts and state.cwd and not state.cwd.startswith("~") and not only_cd and not any(a[0] in ("cd", "pushd", "popd", "su", "ssh", "exit") for a, _ in cmds):
            shown = prompts[-1].group("dir")
            if not shown.startswith("~") and shown != state.cwd:
                found.append(Conflict(kind="cwd", key="prompt", expected=state.cwd, detail=f"prompt shows {shown}"))
        return found

    @staticmethod
    def _check_cat(state: LedgerState, path: str, observation: str) -> list[Conflict]:
        if path in state.files:
            if _NO_SUCH.search(observation):
                return [Conflict(kind="missing_file", key=path, expected="exists", detail="written earlier but reported missing")]
            missing = [ln for ln in state.files[path].splitlines() if ln.strip() and ln.strip() not in observation]
            if missing:
                return [Conflict(kind="file_content", key=path, expected=state.files[path][:200], detail=f"{len(missing)} written line(s) absent")]
        elif path in state.deleted and not _NO_SUCH.search(observation):
            return [Conflict(kind="deleted_path", key=path, expected="No such file or directory")]
        return []

    @staticmethod
    def _check_ls(state: LedgerState, directory: str, observation: str) -> list[Conflict]:
        if _NO_SUCH.search(observation):
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
