"""Desktop accessibility trees: ``role 'name' (x, y) WxH`` lines indented by depth."""

from __future__ import annotations

import re
from typing import Any

from agentworld.judge.rules._common import DomainRules, session_text
from agentworld.judge.rules.web import cut_lines, nesting_breaks, tree_fraction

NODE = re.compile(r"^(\s*)(<root>|[\w-]+\s+(['\"]).*?\3)")
_GEOMETRY = re.compile(r"\((-?\d+),\s*(-?\d+)\)\s+(\d+)x(\d+)")
_NAMED = re.compile(r"^\s*([\w-]+)\s+(['\"])(.+?)\2")
_BOX = re.compile(r"\((-?\d+),\s*(-?\d+)\)\s+(-?\d+)x(-?\d+)")
_DISPLAY = re.compile(r"Xvfb,\s*(\d+)x(\d+)")
_BARE = re.compile(r"^\s*(<root>|application\s)")
_WINDOW = re.compile(r"^\s*\*?\s*(['\"])(.+?)\1", re.M)
_FILE = re.compile(r"[\w.-]+\.\w+")


def windows(text: str) -> list[str]:
    """Titles in the ``Windows:`` list of a desktop observation."""
    _, found, rest = text.partition("\nWindows:\n")
    if not found:
        return []
    body = rest.split("\nFocused:", 1)[0]
    return [m.group(2) for m in _WINDOW.finditer(body)]


def window_key(title: str) -> str:
    """What names a window across its states: the file it shows (``memo9.txt`` in
    ``*/workspace/memo9.txt - Mousepad``, starred or not), else its title."""
    files = _FILE.findall(title)
    return files[0] if files else title


class OsRules(DomainRules):
    name = "os"
    screens = True

    def format_fraction(self, pred: str, truth: str, sample: Any) -> tuple[float, dict[str, Any]]:
        frac, why = tree_fraction(pred, truth, NODE, ("Windows:", "Focused:"))
        t_geo = bool(_GEOMETRY.search(truth))
        p_geo = bool(_GEOMETRY.search(pred))
        # Positions and sizes are part of the layout when the real tree carries them.
        geo = 1.0 if t_geo == p_geo else 0.0
        why["geometry"] = geo
        return 0.8 * frac + 0.2 * geo, why

    def facts(self, text: str) -> dict[str, str]:
        # A named window or widget keeps its role.
        return {f"{m.group(3)}": m.group(1) for line in text.splitlines() if (m := _NAMED.match(line))}

    def kind(self, text: str, sample: Any) -> str:
        # The desktop prints its tree and window list, or the program's traceback; other
        # text is no desktop output.
        kind = super().kind(text, sample)
        if kind == "output" and "<root>" not in text and "\nWindows:" not in text:
            return "text"
        return kind

    def malformed(self, text: str, sample: Any) -> list[str]:
        tree = text.split("\nWindows:", 1)[0].splitlines()
        # Every widget carries its position and size (only the root and the application
        # lines have none): a node line without them is cut off.
        cut = [f"no geometry: {x.strip()[:50]!r}" for x in tree
               if NODE.match(x) and not _BARE.match(x) and not _BOX.search(x)]
        return (nesting_breaks(tree, 2) + cut_lines(tree) + cut)[:3]

    def impossible(self, text: str, sample: Any) -> list[str]:
        """Boxes no widget has: a size below zero (-1x-1 at (-1, -1) is the toolkit's
        unknown), a number with a leading zero, a box past the edge of the display the
        initial state names."""
        out = super().impossible(text, sample)
        display = _DISPLAY.search(sample.system_str)
        width, height = (int(display.group(1)), int(display.group(2))) if display else (None, None)
        for m in _BOX.finditer(text):
            x, y, w, h = (int(g) for g in m.groups())
            if (x, y, w, h) == (-1, -1, -1, -1):
                continue
            zero = any(len(g.lstrip("-")) > 1 and g.lstrip("-").startswith("0") for g in m.groups())
            outside = width is not None and (x + w > width + 1 or y + h > height + 1)
            if zero or w < 0 or h < 0 or outside:
                out.append(m.group(0))
        return out[:3]

    def answers_action(self, pred: str, sample: Any) -> str | None:
        if (why := super().answers_action(pred, sample)) is not None:
            return why
        # The windows the session opened (the file the initial state starts the editor
        # on, a dialog shown earlier) stay on the desktop: an answer showing none of them
        # is another desktop's screen.
        session = session_text(sample)
        fixed = {window_key(t) for t in windows(sample.ground_truth) if window_key(t) in session}
        mine = {window_key(t) for t in windows(pred)}
        # An answer with no window list at all is cut short or malformed (format's
        # business), not another desktop.
        if fixed and mine and not fixed & mine:
            return f"none of the session's windows ({sorted(fixed)[0]!r}...)"
        return None


RULES = OsRules()
