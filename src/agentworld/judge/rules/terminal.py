"""Terminal screens: command echo, output, next prompt."""

from __future__ import annotations

from typing import Any

from agentworld.domains.terminal import last_prompt, typed_text
from agentworld.domains.terminal.jobs import job_contradictions, malformed_job_lines
from agentworld.domains.terminal.screen import PROMPT_LINE, PROMPT_START, prompt_dirs
from agentworld.domains.terminal.shell import commands
from agentworld.judge.rules._common import (
    COMMAND_SHAPES,
    DomainRules,
    altered_session_values,
    command_output_kind,
    norm,
    shape_similarity,
    text_lines,
)


def _body(text: str, typed: bool = True) -> str:
    """The command's output: the screen without the echo line and the final prompt.

    Where the action typed nothing (a wait), the first line's prompt is the one the
    shell already showed and what follows it is output a job printed since
    (``root@sandbox:/workspace# worker done``), not an echoed command."""
    lines = text.strip("\n").splitlines()
    if lines and (m := PROMPT_START.match(lines[0].strip())) and not PROMPT_LINE.match(lines[0].strip()):
        lines = lines[1:] if typed else [lines[0].strip()[m.end():].strip(), *lines[1:]]
    if lines and PROMPT_LINE.match(lines[-1].strip()):
        lines = lines[:-1]
    return "\n".join(lines)


class TerminalRules(DomainRules):
    name = "terminal"
    typed_kinds = True

    def __init__(self, typed: bool = True) -> None:
        self.typed = typed
        """Whether the action types any text (a wait types none: no echo line then)."""

    def for_sample(self, sample: Any) -> TerminalRules:
        return TerminalRules(typed=bool(typed_text(sample.action).strip()))

    def body(self, text: str) -> str:
        return _body(text, self.typed)

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        p, t = text_lines(pred), text_lines(truth)
        checks: dict[str, bool] = {}
        if t:
            # The first line echoes the command after the prompt (or continues the screen).
            checks["echo_line"] = bool(p) and p[0] == t[0]
            ends_prompt = bool(PROMPT_LINE.match(t[-1]))
            checks["final_prompt"] = bool(p) and bool(PROMPT_LINE.match(p[-1])) == ends_prompt
        checks["no_chat_wrapping"] = "```" not in pred or "```" in truth
        shape = shape_similarity(pred, truth)
        checks["line_shapes"] = shape >= 0.5
        frac = sum(checks.values()) / len(checks)
        return frac, {"checks": checks, "shape": round(shape, 3)}

    def kind(self, text: str, sample: Any) -> str:
        """No output, an error line, the command's own output shape (``ls -l`` rows, grep
        hits, a diff...) or other output; a screen with no prompt at all is a full-screen
        program (pager, editor)."""
        if not text.strip():
            return "empty"
        if not any(PROMPT_START.match(x.strip()) for x in text.splitlines()):
            return "screen"
        body = _body(text, self.typed)
        if not body.strip():
            return "no output"
        return command_output_kind(body, typed_text(sample.action))

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        # The echo line: the real screen shows the typed command after the prompt; a
        # screen echoing another command answers that one.
        typed = norm(typed_text(sample.action).split("\n", 1)[0])
        t, p = text_lines(sample.ground_truth), text_lines(pred)
        if typed and t and typed in t[0] and PROMPT_START.match(t[0]):
            if not p or not PROMPT_START.match(p[0]):
                return "no echo of the typed command"
            if typed not in p[0]:
                return f"echoes {p[0][:60]!r}, not {typed[:40]!r}"
        # Output, but not in the shape this command prints (pytest lines for a grep).
        want, got = self.kind(sample.ground_truth, sample), self.kind(pred, sample)
        if want in COMMAND_SHAPES and got in ("output", "screen"):
            return f"output not shaped like {want} output"
        return None

    def determined(self, sample: Any) -> list[str]:
        lines = super().determined(sample)
        # The echoed command line is fixed by the previous prompt and the keystrokes.
        truth = text_lines(sample.ground_truth)
        typed = typed_text(sample.action).split("\n", 1)[0].strip()
        if truth and typed and typed in truth[0] and truth[0] not in lines:
            lines.insert(0, truth[0])
        return lines

    def malformed(self, text: str, sample: Any) -> list[str]:
        """Job lines in no form bash prints (``[1] 1 Done``)."""
        return malformed_job_lines(text_lines(self.body(text)))

    def other_command_output(self, pred: str, sample: Any) -> str | None:
        """An earlier command's output under this command's echo line (the ps table after
        ``kill %1``): what that command printed, not what this one prints. The same
        program run again (``./len`` after ``./len abcd``) prints the same kind of output."""
        mine = self.units(self.body(pred))
        programs = {argv[0] for argv, _ in commands(sample.action)}
        for action, obs in reversed(sample.history()):
            shown = set(self.units(_body(obs)))
            if all(u in shown for u in mine):
                earlier = {argv[0] for argv, _ in commands(action)}
                if earlier and programs and not earlier & programs:
                    return f"output of the earlier {sorted(earlier)[0]!r}, not of {sorted(programs)[0]!r}"
                return None
        return None

    def contradictions(self, pred: str, sample: Any) -> list[str]:
        out = self.history_contradictions(pred, sample)
        # user@host never changes within a session unless the truth shows it changing.
        seen = {m.group("who") for _, o in sample.history() for ln in o.splitlines() if (m := PROMPT_LINE.match(ln.strip()))}
        mine, truth = last_prompt(pred), last_prompt(sample.ground_truth)
        if seen and mine and truth:
            who = mine.split(":", 1)[0]
            if who not in seen and truth.split(":", 1)[0] in seen:
                out.append(f"prompt {mine!r} but the session runs as {sorted(seen)[0]!r}")
        # The working directory: the prompt keeps the real one unless the command moved.
        t_dirs, p_dirs = prompt_dirs(sample.ground_truth), prompt_dirs(pred)
        if t_dirs and p_dirs and p_dirs[-1] != t_dirs[-1]:
            out.append(f"working directory {p_dirs[-1]!r} but the shell is in {t_dirs[-1]!r}")
        # Changed session values; a changed prompt is counted once, above.
        altered = altered_session_values(self.units(pred), self.units(sample.ground_truth), sample)
        out += [c for c in altered if not (out and "@" in c.split("'")[1])]
        # Background jobs: bash's notices name the session's own jobs and number a new one
        # above those alive (lines the real screen shows too are not in question).
        truth_lines = set(text_lines(sample.ground_truth))
        new_lines = [ln for ln in text_lines(self.body(pred)) if ln not in truth_lines]
        return out + job_contradictions(new_lines, sample.history(), sample.action)


RULES = TerminalRules()
