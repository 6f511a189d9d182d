"""Reading a web page state as a script does, and writing actions: the helpers every
scripted web policy shares (:mod:`.tasks`, :mod:`.tasks_miniwob`)."""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass

Gen = Generator[str, str, None]
"""A scripted policy: yields actions, receives each observation."""
_NODE = re.compile(r"^(\t*)\[(\w+)\] (\S+) '((?:[^'\\]|\\.)*)'(.*)$", re.M)
_TEXT = re.compile(r"^\t*StaticText '((?:[^'\\]|\\.)*)'$", re.M)
NO_BID = "0"
"""No element has this id (ids start at 1): a script that cannot find its element acts on it
and gets the browser's error, as an agent would."""


# -- reading a page state -----------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    bid: str
    role: str
    name: str
    props: str


def nodes(obs: str) -> list[Node]:
    return [Node(m.group(2), m.group(3), m.group(4).replace("\\'", "'"), m.group(5)) for m in _NODE.finditer(obs)]


def find(obs: str, role: str | None = None, name: str | None = None, *, contains: str | None = None,
         nth: int = 0) -> str:
    """The id of the ``nth`` element with this role and exact name (or name containing ``contains``)."""
    hits = [n.bid for n in nodes(obs) if (role is None or n.role == role) and (name is None or n.name == name)
            and (contains is None or contains.lower() in n.name.lower())]
    if not hits:
        return NO_BID
    return hits[nth] if -len(hits) <= nth < len(hits) else hits[-1]


def find_url(obs: str, fragment: str, *, nth: int = 0) -> str:
    """The id of the ``nth`` link whose URL contains ``fragment``."""
    hits = [n.bid for n in nodes(obs) if n.role == "link" and fragment in n.props]
    return hits[nth] if -len(hits) <= nth < len(hits) else (hits[-1] if hits else NO_BID)


def texts(obs: str) -> list[str]:
    return [t.replace("\\'", "'") for t in _TEXT.findall(obs)]


def instruction(obs: str) -> str:
    """A MiniWoB page's instruction: the text before its first element."""
    body = obs.split("\nRootWebArea", 1)[-1].splitlines()[1:]
    parts = []
    for line in body:
        if _NODE.match(line):
            break
        if m := _TEXT.match(line):
            parts.append(m.group(1).replace("\\'", "'"))
    return " ".join(parts)


def quoted(text: str) -> list[str]:
    return [q.strip() for q in re.findall(r'"\s*([^"]*?)\s*"', text)]


# -- actions ------------------------------------------------------------------------------------
def click(bid: str) -> str:
    return f"click({bid!r})"


def fill(bid: str, value: str) -> str:
    return f"fill({bid!r}, {value!r})"


def select(bid: str, option: str) -> str:
    return f"select_option({bid!r}, {option!r})"


def hover(bid: str) -> str:
    return f"hover({bid!r})"


def press(key: str) -> str:
    return f"keyboard_press({key!r})"


def type_(text: str) -> str:
    return f"keyboard_type({text!r})"


def goto(url: str) -> str:
    return f"goto({url!r})"


def scroll(dy: int, dx: int = 0) -> str:
    return f"scroll({dx}, {dy})"
