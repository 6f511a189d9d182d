"""The ledger for the desktop (os domain): files saved from the editor, open windows, focus.

Saved files are read by the domain (:func:`agentworld.domains.os.effects`: an editor
window whose title has no ``*`` shows exactly its file's content). Windows and the
active one are read from the observation's window list. Checks fire only where the
action cannot explain a difference: a clean editor showing other content for a file
the session saved, while the action could not have saved or reloaded it, and an open
window missing from the list while the action could not have closed it.
"""

from __future__ import annotations

import re

from agentworld.domains.os import effects, windows
from agentworld.domains.presented import action_of
from agentworld.sim.ledger.base import Conflict, LedgerRules, LedgerState

# Keys, clicks and tools through which a program may save, load, close or switch documents.
_MAY_SAVE = re.compile(r"""['"]s['"]|ctrl\+s|enter|return|click|xdotool|subprocess|save|['"]o['"]|ctrl\+o""", re.I)
_MAY_CLOSE = re.compile(r"""['"][wq]['"]|ctrl\+[wq]|f4|escape|esc['"]|enter|return|click|xdotool|subprocess|kill|close""",
                        re.I)


class DesktopLedger(LedgerRules):
    def update(self, state: LedgerState, action: str, observation: str) -> None:
        for op in effects(action, observation).of("write"):
            state.write(op.target, op.value)
        shown = windows(observation)
        if "\nWindows:\n" in observation:
            state.windows = [title for title, _ in shown]
            state.active_window = next((title for title, active in shown if active), None)

    def check(self, state: LedgerState, action: str, observation: str) -> list[Conflict]:
        out: list[Conflict] = []
        action = action_of(action)  # a presented turn's state section is no program
        if not _MAY_SAVE.search(action):
            for op in effects(action, observation).of("write"):
                known = state.files.get(op.target)
                if known is not None and known != op.value:
                    out.append(Conflict(kind="file_content", key=op.target, expected=known[:200],
                                        detail="the unmodified editor shows other content than the saved file"))
        shown = windows(observation)
        if "\nWindows:\n" in observation and state.windows and not _MAY_CLOSE.search(action):
            titles = {title for title, _ in shown}
            for title in state.windows:
                # A title may change (an edit adds '*'): only a window gone entirely counts.
                if title not in titles and title.lstrip("*") not in {t.lstrip("*") for t in titles}:
                    out.append(Conflict(kind="window", key=title, expected="open",
                                        detail="the window disappeared though the action closes nothing"))
        return out
