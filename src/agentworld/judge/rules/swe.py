"""SWE tool output: numbered file views, edit snippets, command output with exit codes."""

from __future__ import annotations

import itertools
import re
from typing import Any

from agentworld.domains.presented import tool_call
from agentworld.domains.toolcall import shell_command
from agentworld.judge.rules._common import COMMAND_SHAPES, DomainRules, command_output_kind, shape_similarity

NUMBERED = re.compile(r"^\s*(\d+)\t")
_CWD = re.compile(r"^\[Current working directory: (.+)\]$", re.M)
_EDITOR_PATH = re.compile(r"(?:running `cat -n` on|The file|File created successfully at:|in) (/\S+?)[:.]?(?:\s|$)", re.M)
_EDITOR_KINDS = {"view", "edit", "created", "editor error"}
_FOOTER = re.compile(r"^\[(Current working directory|Command finished with exit code).*\]$", re.M)


def numbered_lines(text: str) -> dict[int, str]:
    return {int(m.group(1)): line[m.end():] for line in text.splitlines() if (m := NUMBERED.match(line))}


class SweRules(DomainRules):
    name = "swe"
    typed_kinds = True

    def body(self, text: str) -> str:
        """A shell tool's output without its working-directory and exit-code footer."""
        return _FOOTER.sub("", text).strip("\n")

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        shape = shape_similarity(pred, truth)
        t, p = numbered_lines(truth), numbered_lines(pred)
        if not t:
            return shape, {"file_view": False, "shape": round(shape, 3)}
        if not p:
            return 0.25 * shape, {"file_view": True, "numbered": 0}
        nums = sorted(p)
        consecutive = all(b == a + 1 for a, b in itertools.pairwise(nums))
        overlap = len(set(t) & set(p)) / len(set(t) | set(p))
        frac = 0.3 * float(consecutive) + 0.4 * overlap + 0.3 * shape
        return frac, {"consecutive": consecutive, "line_numbers": round(overlap, 3), "shape": round(shape, 3)}


    def kind(self, text: str, sample: Any) -> str:
        """Editor answers (a file view, an edit snippet, a created file, an editor error)
        or a shell command's output in its command's shape."""
        if not text.strip():
            return "empty"
        head = text.lstrip()
        if head.startswith("ERROR:"):
            return "editor error"
        if "has been edited" in head[:300]:
            return "edit"
        if head.startswith("File created successfully"):
            return "created"
        if "running `cat -n`" in head[:200]:
            return "view"
        call = tool_call(sample.action)
        cmd = shell_command(*call) if call else None
        body = _FOOTER.sub("", text)
        return "command " + command_output_kind(body, cmd or "") if _FOOTER.search(text) else "text"

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        # The editor and the shell print different things: one's answer for the other's call
        # is another tool's output.
        want, got = self.kind(sample.ground_truth, sample), self.kind(pred, sample)
        known = all(k in _EDITOR_KINDS or k.startswith("command ") for k in (want, got))
        if known and (want in _EDITOR_KINDS) != (got in _EDITOR_KINDS):
            return f"a {got} answer where the tool prints {want}"
        # Both tools mark what they print (the editor's messages, the shell's footer):
        # text with neither (prose about the call, a cut-off fragment) is neither's output.
        if got == "text" and (want in _EDITOR_KINDS or want.startswith("command ")):
            return f"text that neither tool prints, where the tool prints {want}"
        call = tool_call(sample.action)
        if call is None:
            return None
        # An editor answer names the file it acted on; a view shows the lines asked for.
        named = {p.rstrip(".,:") for p in _EDITOR_PATH.findall(pred)}
        real = {p.rstrip(".,:") for p in _EDITOR_PATH.findall(sample.ground_truth)}
        if named and real and not named & real:
            return f"about {sorted(named)[0]!r}, the real answer is about {sorted(real)[0]!r}"
        rng = call[1].get("view_range")
        nums = numbered_lines(pred)
        if call[1].get("command") == "view" and isinstance(rng, list) and len(rng) == 2 and nums:
            lo, hi = rng[0], rng[1] if rng[1] != -1 else max(nums)
            if not any(lo <= n <= hi for n in nums):
                return f"lines {min(nums)}-{max(nums)}, the call views {lo}-{hi}"
        want, got = self.kind(sample.ground_truth, sample), self.kind(pred, sample)
        if want.removeprefix("command ") in COMMAND_SHAPES and got in ("command output", "text"):
            return f"output not shaped like {want.removeprefix('command ')} output"
        t_cwd, p_cwd = _CWD.findall(sample.ground_truth), _CWD.findall(pred)
        if t_cwd and p_cwd and p_cwd[-1] != t_cwd[-1]:
            return f"ran in {p_cwd[-1]!r}, the command runs in {t_cwd[-1]!r}"
        return None


RULES = SweRules()
