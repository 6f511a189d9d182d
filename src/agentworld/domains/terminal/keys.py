"""The terminal action format: a JSON list of keystroke batches, and how tmux types it.

An action is ``[{"keystrokes": "ls -la\\n", "duration": 1.0}, ...]``. A batch that is
exactly a key name (``C-c``, ``C-d``, ``C-z``, ``C-l``, ``Escape``, ``Up``...) presses
that key; any other text is typed literally with ``\\n`` pressing Enter. Empty
keystrokes mean: wait ``duration`` seconds and look again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agentworld.domains.presented import action_of

DEFAULT_DURATION = 1.0
MAX_DURATION = 60.0
_NAMED = re.compile(
    r"^(?:[CM]-(?:[a-z\[\]\\@^_?]|Space)|C-M-[a-z]|Escape|Enter|Tab|BTab|BSpace|Space|Up|Down|Left|Right|"
    r"Home|End|PageUp|PageDown|PPage|NPage|IC|DC|Insert|Delete|F(?:[1-9]|1[0-2]))$"
)

class ActionError(ValueError):
    """The action is not a list of keystroke batches."""

@dataclass(frozen=True)
class Batch:
    keystrokes: str
    duration: float

    @property
    def is_key(self) -> bool:
        # fullmatch: "$" would also match before a final newline, and "C-c\n" would go to
        # tmux as one key name with a line break in it, splitting the control command.
        return bool(_NAMED.fullmatch(self.keystrokes))

    @property
    def submits(self) -> bool:
        """Whether this batch can bring a shell prompt back (Enter or a job-control key)."""
        return "\n" in self.keystrokes or self.keystrokes in ("C-c", "C-d", "C-z", "Enter", "C-m", "C-j")

    def tmux_commands(self) -> list[str]:
        """tmux ``send-keys`` command lines (control-mode syntax, no target) that type this batch.

        Text goes as hexadecimal bytes (``-H``), so no character of it (quotes, ``;``,
        ``$``, backslashes, UTF-8) can be read as tmux syntax; key names are quoted.
        """
        if not self.keystrokes:
            return []
        if self.is_key:
            return [f"send-keys '{self.keystrokes}'"]  # names never contain a quote (see _NAMED)
        cmds: list[str] = []
        for i, part in enumerate(self.keystrokes.split("\n")):
            if i:
                cmds.append("send-keys Enter")
            if part:
                cmds.append("send-keys -H " + " ".join(f"{b:02x}" for b in part.encode()))
        return cmds


def parse_action(action: str | list | dict) -> list[Batch]:
    """Parse the action text (or already decoded JSON) into batches; raises :class:`ActionError`."""
    data = action
    if isinstance(action, str):
        try:
            data = json.loads(action, strict=False)  # raw newlines inside strings are common
        except json.JSONDecodeError as exc:
            raise ActionError(f"action is not JSON ({exc.msg}); expected "
                              '[{"keystrokes": "...", "duration": 1.0}]') from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ActionError("action must be a non-empty JSON list of {keystrokes, duration} objects")
    batches = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("keystrokes"), str):
            raise ActionError(f"batch {i}: expected {{\"keystrokes\": str, \"duration\": number}}")
        try:
            duration = float(item.get("duration", DEFAULT_DURATION))
        except (TypeError, ValueError) as exc:
            raise ActionError(f"batch {i}: duration must be a number") from exc
        batches.append(Batch(item["keystrokes"], min(max(duration, 0.0), MAX_DURATION)))
    return batches

def read_batches(action: str) -> list[Batch]:
    """The batches of an action as a user turn carries it, bare or in the published
    presentation (:mod:`agentworld.domains.presented`); raises :class:`ActionError`.
    Readers of recorded actions use this; an environment executes only bare actions
    (:func:`parse_action`)."""
    return parse_action(action_of(action))


def typed_text(action: str) -> str:
    """The text an action types, bare or presented: its batches joined, key presses
    (``C-c``, ``Escape``...) left out; an action that is not a keystroke list is taken as
    typed text itself."""
    bare = action_of(action)
    try:
        return "".join(b.keystrokes for b in parse_action(bare) if not b.is_key)
    except ActionError:
        return bare


def action_json(*batches: tuple[str, float]) -> str:
    """The canonical action text for ``(keystrokes, duration)`` pairs."""
    return json.dumps([{"keystrokes": k, "duration": d} for k, d in batches], ensure_ascii=False)
