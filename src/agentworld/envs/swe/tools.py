"""The SWE tool set: the schemas an agent sees and the bash tool's runner.

Two tools, as in popular coding-agent scaffolds: ``str_replace_editor`` (see
``editor.py``) and ``bash``. An action is one JSON tool call
``{"name": "<tool>", "arguments": {...}}``. The bash tool keeps the working directory
across calls like a persistent shell, merges stderr into stdout in order, and ends its
output with the working directory and the exit code.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from agentworld.envs.swe.editor import COMMANDS
from agentworld.tool_calls import ToolCallError, parse_tool_call

EDITOR_SCHEMA: dict[str, Any] = {
    "name": "str_replace_editor",
    "description": (
        "Custom editing tool for viewing, creating and editing files.\n"
        "* State is persistent across command calls and discussions with the user\n"
        "* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a "
        "directory, `view` lists non-hidden files and directories up to 2 levels deep\n"
        "* The `create` command cannot be used if the specified `path` already exists as a file\n"
        "* If a `command` generates a long output, it will be truncated and marked with `<response clipped>`\n"
        "* The `undo_edit` command will revert the last edit made to the file at `path`\n"
        "Notes for using the `str_replace` command:\n"
        "* The `old_str` parameter should match EXACTLY one or more consecutive lines from the "
        "original file. Be mindful of whitespaces!\n"
        "* If the `old_str` parameter is not unique in the file, the replacement will not be "
        "performed. Make sure to include enough context in `old_str` to make it unique\n"
        "* The `new_str` parameter should contain the edited lines that should replace the `old_str`"
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": list(COMMANDS),
                        "description": "The command to run. Allowed options are: " + ", ".join(f"`{c}`" for c in COMMANDS) + "."},
            "path": {"type": "string", "description": "Absolute path to file or directory, e.g. `/workspace/file.py` or `/workspace`."},
            "file_text": {"type": "string", "description": "Required parameter of `create` command, with the content of the file to be created."},
            "old_str": {"type": "string", "description": "Required parameter of `str_replace` command containing the string in `path` to replace."},
            "new_str": {"type": "string", "description": "Optional parameter of `str_replace` command containing the new string (if not given, no string will be added). Required parameter of `insert` command containing the string to insert."},
            "insert_line": {"type": "integer", "description": "Required parameter of `insert` command. The `new_str` will be inserted AFTER the line `insert_line` of `path`."},
            "view_range": {"type": "array", "items": {"type": "integer"},
                           "description": "Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file."},
        },
        "required": ["command", "path"],
    },
}

BASH_SCHEMA: dict[str, Any] = {
    "name": "bash",
    "description": (
        "Execute a bash command in the terminal.\n"
        "* The working directory persists between calls; environment changes do not.\n"
        "* Long running commands are stopped after a timeout; run them in the background if needed.\n"
        "* Output longer than a few thousand lines is truncated in the middle."
    ),
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The bash command to execute."}},
        "required": ["command"],
    },
}

TOOLS: list[dict[str, Any]] = [BASH_SCHEMA, EDITOR_SCHEMA]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)
MAX_BASH_OUTPUT = 30000
_CWD_MARK = "\x1eAW_CWD="


def tool_call(tool: str, /, **arguments: Any) -> str:
    """The action text for one tool call."""
    return json.dumps({"name": tool, "arguments": arguments}, ensure_ascii=False)


def parse_action(action: str) -> tuple[str, dict[str, Any]]:
    """``(tool name, arguments)``; ``ValueError`` with the agent-facing message otherwise."""
    try:
        name, args = parse_tool_call(action)
    except ToolCallError as exc:
        raise ValueError(_CALL_ERRORS[exc.kind].format(exc=exc)) from None
    if name not in TOOL_NAMES:
        raise ValueError(f"unknown tool {name!r}; available tools: {', '.join(TOOL_NAMES)}")
    return name, args


# Agent-facing wording per parse failure, as recorded in shipped trajectories.
_CALL_ERRORS = {
    "not_json": "the action is not a JSON tool call ({exc.msg} at column {exc.colno})",
    "not_a_call": 'the action must be a JSON object {{"name": "<tool>", "arguments": {{...}}}}',
    "arguments_not_json": "the tool arguments are not valid JSON ({exc.msg})",
    "arguments_not_object": "the tool arguments must be a JSON object",
}


def clip_middle(text: str, limit: int = MAX_BASH_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n<response clipped: {cut} characters omitted>\n{text[-half:]}"


@dataclass
class Bash:
    """A bash tool over a sandbox whose working directory persists between calls."""

    sandbox: Any
    cwd: str = "/workspace"
    env: dict[str, str] | None = None
    timeout: float = 120.0

    def __call__(self, command: str) -> tuple[str, int | None]:
        """The printed observation and the exit code (None when the command timed out)."""
        script = (
            f"exec 2>&1; cd {shlex.quote(self.cwd)} 2>/dev/null || cd /; {command}\n"
            f"__aw_rc=$?; printf '{_CWD_MARK}%s' \"$(pwd)\"; exit $__aw_rc"
        )
        res = self.sandbox.run(["/bin/bash", "-c", script], cwd="/", timeout=self.timeout,
                               env=self.env)
        out = res.stdout
        if _CWD_MARK in out:
            out, cwd = out.rsplit(_CWD_MARK, 1)
            self.cwd = cwd.strip() or self.cwd
        out = clip_middle(out.rstrip("\n"))
        lines = [out] if out else []
        if res.timed_out:
            lines.append(f"[Command timed out after {self.timeout:g} seconds and was stopped]")
            code = None
        else:
            code = res.exit_code
        lines.append(f"[Current working directory: {self.cwd}]")
        if code is not None:
            lines.append(f"[Command finished with exit code {code}]")
        return "\n".join(lines), code
