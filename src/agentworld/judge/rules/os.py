"""Desktop accessibility trees: ``role 'name' (x, y) WxH`` lines indented by depth."""

from __future__ import annotations

import re
from typing import Any

from agentworld.judge.rules._common import DomainRules
from agentworld.judge.rules.web import tree_fraction

NODE = re.compile(r"^(\s*)(<root>|[\w-]+\s+(['\"]).*?\3)")
_GEOMETRY = re.compile(r"\((-?\d+),\s*(-?\d+)\)\s+(\d+)x(\d+)")
_NAMED = re.compile(r"^\s*([\w-]+)\s+(['\"])(.+?)\2")


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


RULES = OsRules()
