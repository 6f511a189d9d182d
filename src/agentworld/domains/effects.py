"""What an action did to the environment's state, read from the action and its observation.

Each domain has one extractor, ``agentworld.domains.<domain>.effects(action,
observation) -> Effects``; :func:`effects_of` finds it. Both the simulator's ledger
(``agentworld.sim.ledger``: it applies the effects to the session's state) and the RL rule
verifiers (``agentworld.judge.verifiers``: written files read back, variables used, rows
queried) read the same :class:`Effects`, so "what did this action write or read" has one
answer.

Effects are plain facts in action order; paths stay as the action wrote them (a ledger
resolves them against its working directory, a verifier compares them as written).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

EffectKind = Literal[
    "write",  # target: path, value: content, append
    "edit",  # target: path, source: the unique old text, value: its replacement
    "sed",  # target: path edited in place, value: the sed script(s), one a line; source: "-E" for extended regexps
    "unknown",  # target: a path (and all below it) changed in a way not read exactly: what was known is dropped
    "delete",  # target: path
    "mkdir",  # target: path
    "touch",  # target: path
    "copy",  # source -> target (paths)
    "move",  # source -> target (paths)
    "cd",  # target: directory
    "setenv",  # target: name, value
    "unsetenv",  # target: name
    "read",  # target: path the action reads
    "sql",  # value: one SQL statement the action runs
    "store",  # target: tool name, value: JSON of the arguments of a call that stores records
    "query",  # target: tool name of a call that reads stored records back
    "created",  # target: an id the call created, source: the tool name, value: JSON arguments
    "forget_id",  # target: an id the call deleted
    "remember",  # target: memory key, value
    "forget",  # target: memory key
    "extract",  # target: URL of a page extracted, value: its text
]


@dataclass(frozen=True)
class Effect:
    kind: EffectKind
    target: str = ""
    value: str = ""
    source: str = ""
    append: bool = False


@dataclass
class Effects:
    """The effects of one action, in order."""

    ops: list[Effect] = field(default_factory=list)
    failed: bool = False
    """The observation says the action's effect did not happen (an error), so ``ops`` is empty."""

    def of(self, *kinds: EffectKind) -> list[Effect]:
        return [op for op in self.ops if op.kind in kinds]

    def written(self, before: Mapping[str, str] | None = None) -> dict[str, str]:
        """Path (as written) -> the content the action left there; appends extend what
        ``before`` (the files earlier actions left) holds."""
        out: dict[str, str] = dict(before or {})
        for op in self.of("write"):
            out[op.target] = (out.get(op.target, "") if op.append else "") + op.value
        return out

    def reads(self) -> list[str]:
        return list(dict.fromkeys(op.target for op in self.of("read")))

    def env(self) -> dict[str, str]:
        """Variables the action exported (name -> value)."""
        return {op.target: op.value for op in self.of("setenv")}

    def sql(self) -> list[str]:
        return [op.value for op in self.of("sql")]
