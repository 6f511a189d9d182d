"""A file viewer and editor tool in the style of the widely used ``str_replace_editor``.

Commands: ``view`` (``cat -n`` style numbered lines, or a two-level directory listing),
``create``, ``str_replace`` (the old string must occur exactly once), ``insert`` and
``undo_edit``. Outputs and error messages follow that tool's wording, since agents (and the
world models that imitate their environments) are trained on it.

Every path is a path inside the sandbox and every read, write and listing goes through a
process in the sandbox (:class:`SandboxFiles`), like the original tool working inside its
container: a symlink planted by the agent can never redirect a write on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Protocol

SNIPPET_LINES = 4
MAX_OUTPUT = 16000
CLIPPED = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order "
    "to find the line numbers of what you are looking for.</NOTE>"
)
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


class ToolError(Exception):
    """An error the tool reports to the agent (not a failure of the environment)."""


def clip(text: str, limit: int = MAX_OUTPUT) -> str:
    return text if len(text) <= limit else text[:limit] + CLIPPED


def numbered(text: str, descriptor: str, first_line: int = 1) -> str:
    """The ``cat -n`` rendering the tool prints for files and snippets."""
    body = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(clip(text).expandtabs().split("\n"), first_line))
    return f"Here's the result of running `cat -n` on {descriptor}:\n{body}\n"


@dataclass
class Editor:
    """One agent's editor over a workspace; keeps per-file undo history."""

    files: Files
    cwd: str = "/workspace"
    """Where relative paths would have been meant (named in the error)."""
    history: dict[str, list[str]] = field(default_factory=dict)

    def __call__(self, args: dict[str, Any]) -> str:
        command = args.get("command")
        path = args.get("path")
        if command not in COMMANDS:
            raise ToolError(
                f"Unrecognized command {command}. The allowed commands for the str_replace_editor tool "
                f"are: {', '.join(COMMANDS)}"
            )
        if not isinstance(path, str) or not path:
            raise ToolError(f"Parameter `path` is required for command: {command}.")
        kind = self._resolve(path, command)
        if command == "view":
            return self.view(path, kind, args.get("view_range"))
        if command == "create":
            if args.get("file_text") is None:
                raise ToolError("Parameter `file_text` is required for command: create.")
            return self.create(path, str(args["file_text"]))
        if command == "str_replace":
            if args.get("old_str") is None:
                raise ToolError("Parameter `old_str` is required for command: str_replace.")
            return self.str_replace(path, str(args["old_str"]), str(args.get("new_str") or ""))
        if command == "insert":
            if args.get("insert_line") is None:
                raise ToolError("Parameter `insert_line` is required for command: insert.")
            if args.get("new_str") is None:
                raise ToolError("Parameter `new_str` is required for command: insert.")
            return self.insert(path, args["insert_line"], str(args["new_str"]))
        return self.undo_edit(path)

    # -- paths ---------------------------------------------------------------------
    def _resolve(self, path: str, command: str) -> str:
        if not PurePosixPath(path).is_absolute():
            raise ToolError(
                f"The path {path} is not an absolute path, it should start with `/`. "
                f"Maybe you meant {PurePosixPath(self.cwd) / path}?"
            )
        kind = self.files.kind(path)
        if kind is None and command != "create":
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if kind is not None and command == "create":
            raise ToolError(f"File already exists at: {path}. Cannot overwrite files using command `create`.")
        if kind == "dir" and command != "view":
            raise ToolError(f"The path {path} is a directory and only the `view` command can be used on directories")
        return kind or "new"

    # -- commands ------------------------------------------------------------------
    def view(self, path: str, kind: str, view_range: Any) -> str:
        if kind == "dir":
            if view_range:
                raise ToolError("The `view_range` parameter is not allowed when `path` points to a directory.")
            listing = self.files.listing(path)
            return (
                f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
                f"{listing}\n"
            )
        text = self._read(path)
        first = 1
        if view_range:
            if not (isinstance(view_range, list) and len(view_range) == 2 and all(isinstance(i, int) for i in view_range)):
                raise ToolError("Invalid `view_range`. It should be a list of two integers.")
            lines = text.split("\n")
            n = len(lines)
            first, last = view_range
            if first < 1 or first > n:
                raise ToolError(
                    f"Invalid `view_range`: {view_range}. Its first element `{first}` should be within the "
                    f"range of lines of the file: {[1, n]}"
                )
            if last > n:
                raise ToolError(
                    f"Invalid `view_range`: {view_range}. Its second element `{last}` should be smaller than "
                    f"the number of lines in the file: `{n}`"
                )
            if last != -1 and last < first:
                raise ToolError(
                    f"Invalid `view_range`: {view_range}. Its second element `{last}` should be larger or "
                    f"equal than its first `{first}`"
                )
            text = "\n".join(lines[first - 1:] if last == -1 else lines[first - 1:last])
        return numbered(text, path, first)

    def create(self, path: str, file_text: str) -> str:
        self._write(path, file_text)
        self.history.setdefault(path, []).append(file_text)
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old: str, new: str) -> str:
        text = self._read(path).expandtabs()
        old, new = old.expandtabs(), new.expandtabs()
        count = text.count(old)
        if count == 0:
            raise ToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if count > 1:
            lines = [i + 1 for i, line in enumerate(text.split("\n")) if old in line]
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines {lines}. "
                "Please ensure it is unique"
            )
        if old == new:
            raise ToolError(f"No replacement was performed, old_str `{old}` is the same as new_str `{new}`.")
        updated = text.replace(old, new)
        self._write(path, updated)
        self.history.setdefault(path, []).append(text)
        at = text.split(old)[0].count("\n")
        start = max(0, at - SNIPPET_LINES)
        end = at + SNIPPET_LINES + new.count("\n")
        snippet = "\n".join(updated.split("\n")[start:end + 1])
        return (
            f"The file {path} has been edited. " + numbered(snippet, f"a snippet of {path}", start + 1)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )

    def insert(self, path: str, insert_line: Any, new: str) -> str:
        text = self._read(path).expandtabs()
        new = new.expandtabs()
        lines = text.split("\n")
        n = len(lines)
        if not isinstance(insert_line, int) or insert_line < 0 or insert_line > n:
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines "
                f"of the file: {[0, n]}"
            )
        new_lines = new.split("\n")
        updated = lines[:insert_line] + new_lines + lines[insert_line:]
        snippet = (
            lines[max(0, insert_line - SNIPPET_LINES):insert_line]
            + new_lines
            + lines[insert_line:insert_line + SNIPPET_LINES]
        )
        self._write(path, "\n".join(updated))
        self.history.setdefault(path, []).append(text)
        return (
            f"The file {path} has been edited. "
            + numbered("\n".join(snippet), "a snippet of the edited file", max(1, insert_line - SNIPPET_LINES + 1))
            + "Review the changes and make sure they are as expected (correct indentation, no duplicate "
            "lines, etc). Edit the file again if necessary."
        )

    def undo_edit(self, path: str) -> str:
        stack = self.history.get(path)
        if not stack:
            raise ToolError(f"No edit history found for {path}.")
        previous = stack.pop()
        self._write(path, previous)
        return f"Last edit to {path} undone successfully. " + numbered(previous, path)

    # -- io ------------------------------------------------------------------------
    def _read(self, path: str) -> str:
        try:
            return self.files.read(path)
        except OSError as exc:
            raise ToolError(f"Ran into {exc} while trying to read {path}") from None

    def _write(self, path: str, text: str) -> None:
        try:
            self.files.write(path, text)
        except OSError as exc:
            raise ToolError(f"Ran into {exc} while trying to write to {path}") from None


class Files(Protocol):
    """File access as seen by the agent's machine."""

    def kind(self, path: str) -> str | None:
        """``"dir"``, ``"file"`` or None when nothing is there."""

    def read(self, path: str) -> str: ...

    def write(self, path: str, text: str) -> None: ...

    def listing(self, path: str) -> str:
        """Non-hidden entries up to two levels below ``path``, one per line."""


@dataclass
class SandboxFiles:
    """:class:`Files` through processes in a :class:`~agentworld.envs.sandbox.Sandbox`."""

    sandbox: Any

    def kind(self, path: str) -> str | None:
        res = self.sandbox.run(["/bin/sh", "-c", 'if [ -d "$1" ]; then echo dir; elif [ -e "$1" ]; then echo file; fi',
                                "sh", path], cwd="/")
        return res.stdout.strip() or None

    def read(self, path: str) -> str:
        res = self.sandbox.run(["/bin/cat", "--", path], cwd="/")
        if res.exit_code != 0:
            raise OSError(_errno_text(res.stderr, path))
        return res.stdout

    def write(self, path: str, text: str) -> None:
        # New files get their parent folders, as the agent's editor does.
        script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"'
        res = self.sandbox.run(["/bin/sh", "-c", script, "sh", path], input=text, cwd="/")
        if res.exit_code != 0:
            raise OSError(_errno_text(res.stderr, path))

    def listing(self, path: str) -> str:
        res = self.sandbox.run(["find", path, "-maxdepth", "2", "-not", "-path", "*/.*"], cwd="/")
        return (res.stdout + res.stderr).rstrip("\n")


def _errno_text(stderr: str, path: str) -> str:
    """``cat: x: Permission denied`` -> ``[Errno 13] Permission denied: 'x'`` (Python's wording)."""
    msg = stderr.strip().rsplit(": ", 1)[-1] if stderr.strip() else "I/O error"
    codes = {"No such file or directory": 2, "Permission denied": 13, "Is a directory": 21,
             "Not a directory": 20, "No space left on device": 28, "Read-only file system": 30}
    return f"[Errno {codes[msg]}] {msg}: '{path}'" if msg in codes else msg
