"""Terminal screens: command echo, output, next prompt."""

from __future__ import annotations

from typing import Any

from agentworld.domains.terminal import last_prompt, typed_text
from agentworld.domains.terminal.screen import PROMPT_LINE
from agentworld.judge.rules._common import DomainRules, shape_similarity, text_lines


class TerminalRules(DomainRules):
    name = "terminal"

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

    def determined(self, sample: Any) -> list[str]:
        lines = super().determined(sample)
        # The echoed command line is fixed by the previous prompt and the keystrokes.
        truth = text_lines(sample.ground_truth)
        typed = typed_text(sample.action).split("\n", 1)[0].strip()
        if truth and typed and typed in truth[0] and truth[0] not in lines:
            lines.insert(0, truth[0])
        return lines

    def contradictions(self, pred: str, sample: Any) -> list[str]:
        out = super().contradictions(pred, sample)
        # user@host never changes within a session unless the truth shows it changing.
        seen = {m.group("who") for _, o in sample.history() for ln in o.splitlines() if (m := PROMPT_LINE.match(ln.strip()))}
        mine, truth = last_prompt(pred), last_prompt(sample.ground_truth)
        if seen and mine and truth:
            who = mine.split(":", 1)[0]
            if who not in seen and truth.split(":", 1)[0] in seen:
                out.append(f"prompt {mine!r} but the session runs as {sorted(seen)[0]!r}")
        return out


RULES = TerminalRules()
