"""The ``retrieval`` backend: the floor, a non-parametric baseline every world model should beat.

What it does, and nothing more:

- **One domain at a time.** Past turns are indexed per domain, and a request is answered
  from its own domain's index only: the caller's ``domain`` (a benchmark sample's, a
  simulated environment's), else the backend's ``domain=`` option, else the index's only
  domain. A request whose domain is none of these is an error that says what to pass --
  never a guess across domains (a terminal action answered with an MCP tool result).
- **Keyed on the action.** Each domain's actions are read into the words that decide
  its observation (:func:`action_key`): terminal -- the command lines typed (command
  names and arguments weigh most) and the control keys pressed (``C-c``); mcp -- the
  tool name, argument keys and values; search -- the tool and its query or URL; swe --
  the tool, the shell command it runs and the paths it names. BM25 scores a past turn by
  that key plus, at a lower weight, its recent context (the last actions and
  observations): the action decides, the context breaks ties between turns that ran the
  same action in different states.
- **Answers with the nearest past observation**, adapted only where the change is
  deterministic (:func:`adapt_observation`): on a terminal, the echoed command line
  becomes this action's command after this session's prompt, and the final prompt
  becomes this session's prompt. Everything else is the past turn's text as recorded.
- **Reads actions bare.** User turns in the published presentation (a turn header, the
  current state, ``**Action:**`` and a fenced block) are read through
  :func:`agentworld.domains.presented.action_of` where actions come in (indexed turns,
  requests), so a presented request gets the answer its bare twin gets.

No model, no GPU, answers in milliseconds. Index *training* trajectories only
(``agentworld data split ... --split train``): trajectories stamped
``provenance.split == "test"`` are never indexed, and a benchmark's own samples
(``*_test.jsonl``) would answer them with their ground truth.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentworld.domains import DOMAINS, get_domain
from agentworld.domains.presented import action_of
from agentworld.domains.terminal.keys import ActionError, parse_action, read_batches
from agentworld.domains.terminal.screen import PROMPT_LINE, PROMPT_START
from agentworld.domains.terminal.shell import split_commands
from agentworld.domains.toolcall import shell_command
from agentworld.jsonl import read_jsonl
from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message
from agentworld.parsing import parse_prediction, strip_marker
from agentworld.prompts import format_observation
from agentworld.records.bench import SUFFIX, BenchSample, as_text
from agentworld.records.trajectory import Trajectory
from agentworld.tool_calls import read_tool_call

# Single-character words matter here (`ls -l`, `cd /`), so no stopwords and \w+ tokens.
_SPLITTER = r"(?u)\w+"
_WORD = re.compile(_SPLITTER)
# How many times a key's parts are repeated: BM25 has no field weights, so the parts that
# decide an observation (a command's name, a tool's name) count more by occurring more.
_HEAVY, _MEDIUM = 3, 2


@dataclass(frozen=True)
class PastTurn:
    """A turn found in the source, with the turns before it."""

    history: list[tuple[str, str]]
    action: str
    observation: str
    reasoning: str | None = None
    trajectory_id: str | None = None
    """The trajectory (or benchmark sample's trajectory) the turn came from."""


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _tag(prefix: str, text: str) -> str:
    """One token for a name (``cmd_git``, ``tool_read_file``) that never matches plain words."""
    return f"{prefix}_" + "_".join(_words(text))


def _command_line_key(line: str) -> list[str]:
    """A shell line: each simple command's name (heavy) and its arguments (medium)."""
    out: list[str] = []
    for words in split_commands(line) or [line.split()]:
        if not words:
            continue
        name = words[0].rsplit("/", 1)[-1]
        out += [_tag("cmd", name)] * _HEAVY + _words(name)
        for arg in words[1:]:
            out += _words(arg) * _MEDIUM
    return out


def terminal_key(action: str) -> list[str]:
    """The keystrokes: each typed command line and each control key (``C-c``: ``key_c_c``);
    typing without Enter and waiting are tokens of their own."""
    try:
        batches = parse_action(action)
    except ActionError:
        # Not keystrokes (a served floor scripting a judge or a policy): plain words.
        return _words(action)
    out: list[str] = []
    for b in batches:
        if not b.keystrokes:
            out.append("key_wait")
        elif b.is_key:
            out += [_tag("key", b.keystrokes)] * _HEAVY
        else:
            *lines, rest = b.keystrokes.split("\n")
            for line in lines:
                out += _command_line_key(line) if line.strip() else ["key_enter"]
            if rest.strip():
                out += ["typed_no_enter", *_command_line_key(rest)]
    return out


def _value_words(value: object) -> list[str]:
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in (_tag("arg", str(k)), *_value_words(v))]
    if isinstance(value, list):
        return [w for v in value for w in _value_words(v)]
    return _words(str(value))


def tool_key(action: str) -> list[str]:
    """A tool call: its name (heavy), each argument key (medium) and the values' words."""
    call = read_tool_call(action)
    if call is None:
        return _words(action)
    name, args = call
    out = [_tag("tool", name)] * _HEAVY + _words(name)
    for key, value in args.items():
        out += [_tag("arg", str(key))] * _MEDIUM + _value_words(value)
    return out


def search_key(action: str) -> list[str]:
    """A search call: the tool (heavy) and its query or URL words (medium): the results
    of a search are decided by what it asked for."""
    call = read_tool_call(action)
    if call is None:
        return _words(action)
    name, args = call
    out = [_tag("tool", name)] * _HEAVY
    for key, value in args.items():
        words = _value_words(value)
        out += words * _MEDIUM if key in ("query", "queries", "url", "urls", "key") else words
    return out


def swe_key(action: str) -> list[str]:
    """A SWE tool call: the tool (heavy); a shell tool's command line read like a
    terminal's; paths (medium); the other arguments' words."""
    call = read_tool_call(action)
    if call is None:
        return _words(action)
    name, args = call
    out = [_tag("tool", name)] * _HEAVY
    if (line := shell_command(name, args)) is not None:
        return out + _command_line_key(line.strip())
    for key, value in args.items():
        words = _value_words(value)
        heavy = key in ("command", "path", "file", "file_path", "filename", "paths")
        out += [_tag("arg", str(key))] + (words * _MEDIUM if heavy else words)
    return out


ACTION_KEYS: dict[str, Callable[[str], list[str]]] = {
    "terminal": terminal_key,
    "mcp": tool_key,
    "search": search_key,
    "swe": swe_key,
}
"""Per-domain action readers; other domains key on the action's plain words."""


def action_key(domain: str, action: str) -> str:
    """The text BM25 indexes for an action of ``domain``, bare or presented (space-separated tokens)."""
    return " ".join(ACTION_KEYS.get(domain, _words)(action_of(action)))


def context_text(domain: str, history: list[tuple[str, str]], context_turns: int) -> str:
    """The last ``context_turns`` actions (as keys) and observations before a turn."""
    recent = history[-context_turns:] if context_turns > 0 else []
    return "\n".join(f"{action_key(domain, act)}\n{obs}" for act, obs in recent)


# -- adapting an answer ------------------------------------------------------------------

def _typed_lines(action: str) -> list[str] | None:
    """The command lines a terminal action (bare or presented) submits (Enter pressed),
    or None when it is not a keystroke list."""
    try:
        batches = read_batches(action)
    except ActionError:
        return None
    text = "".join(b.keystrokes for b in batches if not b.is_key)
    return text.split("\n")[:-1]


def session_prompt(history: list[tuple[str, str]]) -> str | None:
    """The bare prompt the session's last observation ended at (``root@host:/dir#``), or
    None when the last screen shows no finished command (or there is no history)."""
    if not history:
        return None
    found = [m.group(0) for m in PROMPT_LINE.finditer(history[-1][1])]
    return found[-1].rstrip() if found else None


def adapt_terminal(observation: str, past_action: str, action: str, history: list[tuple[str, str]]) -> str:
    """The past screen as this session would show it: each echoed command line (a prompt
    followed by the line the past action typed) shows this action's line instead, after
    this session's prompt; a final bare prompt becomes this session's prompt. A past
    command that changed directory keeps its final directory. Nothing else changes."""
    past_lines, lines = _typed_lines(past_action), _typed_lines(action)
    prompt = session_prompt(history)
    out = observation.split("\n")
    echo_prompt: str | None = None
    if past_lines is not None and lines is not None:
        # Line i of this action replaces echo i of the past one; unmatched lines stay.
        i = 0
        for n, row in enumerate(out):
            if i >= min(len(past_lines), len(lines)):
                break
            m = PROMPT_START.match(row)
            if m and row[m.end():] == past_lines[i] and past_lines[i]:
                shown = prompt or m.group(0).rstrip()
                echo_prompt = echo_prompt or m.group(0).rstrip()
                out[n] = f"{shown} {lines[i]}" if lines[i] else shown
                i += 1
    if prompt and out and PROMPT_LINE.fullmatch(out[-1].rstrip()):
        final = out[-1].rstrip()
        if echo_prompt is None or final == echo_prompt:
            out[-1] = prompt
    return "\n".join(out)


def adapt_observation(domain: str, past: PastTurn, action: str, history: list[tuple[str, str]]) -> str:
    """The past turn's observation as the answer to ``action``: only the deterministic
    parts change (see :func:`adapt_terminal`); other domains answer verbatim."""
    if domain == "terminal":
        return adapt_terminal(past.observation, past.action, action, history)
    return past.observation


# -- the index ---------------------------------------------------------------------------

class DomainIndex:
    """BM25 over one domain's past turns: the action key, plus the recent context at
    ``context_weight``."""

    def __init__(self, domain: str, turns: list[PastTurn], context_turns: int, context_weight: float):
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.domain = domain
        self.turns = turns
        self.context_turns = context_turns
        self.context_weight = context_weight
        # bm25s wants dense token ids per index, so each index has its own vocabulary.
        self._parts = []
        keys = [action_key(domain, t.action) for t in turns]
        contexts = [context_text(domain, t.history, context_turns) for t in turns]
        for texts in (keys, contexts):
            tok = Tokenizer(lower=True, splitter=_SPLITTER, stopwords=None)
            index = bm25s.BM25()
            index.index(tok.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False), show_progress=False)
            self._parts.append((tok, index))

    def scores(self, action: str, history: list[tuple[str, str]]) -> np.ndarray:
        (atok, actions), (ctok, contexts) = self._parts
        query = action_key(self.domain, action)
        out = actions.get_scores(atok.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0])
        if self.context_weight and self.context_turns:
            text = context_text(self.domain, history, self.context_turns)
            ids = ctok.tokenize([text], update_vocab=False, return_as="ids", show_progress=False)[0]
            out = out + self.context_weight * contexts.get_scores(ids)
        return out

    def search(
        self, action: str, history: list[tuple[str, str]], k: int, *, skip: Callable[[PastTurn], bool] | None = None
    ) -> list[tuple[float, PastTurn]]:
        """The ``k`` best past turns, best first, leaving out those ``skip`` rejects."""
        scores = self.scores(action, history)
        found: list[tuple[float, PastTurn]] = []
        # Stable sort: among equal scores the earlier turn in the store wins.
        for i in np.argsort(-scores, kind="stable"):
            turn = self.turns[int(i)]
            if skip is not None and skip(turn):
                continue
            found.append((float(scores[i]), turn))
            if len(found) >= k:
                break
        return found


def build_indexes(
    turns: dict[str, list[PastTurn]], context_turns: int = 2, context_weight: float = 0.3
) -> dict[str, DomainIndex]:
    """One :class:`DomainIndex` per domain that has turns."""
    return {d: DomainIndex(d, t, context_turns, context_weight) for d, t in turns.items() if t}


def _source_files(source: Path) -> list[Path]:
    if source.is_dir():
        files = sorted(p for p in source.rglob("*.jsonl") if not p.name.startswith("."))
    elif source.exists():
        files = [source]
    else:
        raise FileNotFoundError(f"retrieval source not found: {source}")
    if not files:
        raise FileNotFoundError(f"no .jsonl files under {source}")
    return files


def source_digest(source: Path) -> str:
    """Names, sizes and times of the source's files: changes when the source does."""
    digest = hashlib.sha256()
    for p in _source_files(source):
        st = p.stat()
        digest.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def load_turns(source: Path, *, trajectories_only: bool = False) -> dict[str, list[PastTurn]]:
    """Per domain, every distinct turn found under ``source``.

    ``*_test.jsonl`` files are read as AgentWorldBench samples (each evaluated turn once,
    duplicates across samples dropped) unless ``trajectories_only``; every other
    ``.jsonl`` file as trajectories. Trajectories stamped ``provenance.split == "test"``
    are always left out: the train side is everything else, as ``data split`` reads it.
    """
    out: dict[str, list[PastTurn]] = {}
    seen: set[str] = set()
    for path in _source_files(source):
        if path.name.endswith(SUFFIX):
            if trajectories_only:
                continue
            for s in read_jsonl(path, BenchSample).items:
                # Only complete (action, observation) turns: one list may run past the other.
                pairs = [(as_text(a), strip_marker(as_text(o))) for a, o in zip(s.prompt, s.response, strict=False)]
                _add(out, seen, s.domain, pairs, [None] * len(pairs), s.trajectory)
        else:
            add_trajectories(out, seen, read_jsonl(path, Trajectory).items)
    return out


def add_trajectories(
    out: dict[str, list[PastTurn]], seen: set[str], trajectories: Iterable[Trajectory]
) -> dict[str, list[PastTurn]]:
    """Add the distinct turns of ``trajectories`` to ``out`` (per domain), leaving out
    those stamped ``provenance.split == "test"``; returns ``out``."""
    for traj in trajectories:
        if traj.provenance.split == "test":
            continue
        pairs = [(t.action, t.observation) for t in traj.turns]
        _add(out, seen, traj.domain, pairs, [t.reasoning for t in traj.turns], traj.id)
    return out


def _add(
    out: dict[str, list[PastTurn]], seen: set[str], domain: str, pairs: list[tuple[str, str]],
    reasoning: list[str | None], traj_id: str,
) -> None:
    # Samples of one trajectory repeat its earlier turns: a turn is known by its whole
    # prefix, so each distinct past turn is indexed once.
    digest = hashlib.sha256(domain.encode())
    # Bare actions: a presented sample's turn is the same turn as its trajectory's.
    pairs = [(action_of(a), o) for a, o in pairs]
    for t, (action, obs) in enumerate(pairs):
        digest.update(f"\x1e{action}\x1f{obs}".encode())
        key = digest.copy().hexdigest()
        if key not in seen:
            seen.add(key)
            out.setdefault(domain, []).append(PastTurn(pairs[:t], action, obs, reasoning[t], traj_id))


def query_of(messages: list[Message]) -> tuple[str | None, list[tuple[str, str]], str]:
    """``(system, history, action)`` read back from chat messages built by ``prompts``;
    the actions bare (user turns read through :func:`~agentworld.domains.presented.action_of`)."""
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    turns = [m for m in messages if m["role"] in ("user", "assistant")]
    if not turns or turns[-1]["role"] != "user":
        raise BackendError("the last message must be the user's action")
    history: list[tuple[str, str]] = []
    pending: str | None = None
    for m in turns[:-1]:
        if m["role"] == "user":
            pending = action_of(m["content"])
        elif pending is not None:
            parsed = parse_prediction(m["content"])
            history.append((pending, parsed.observation if parsed.ok else m["content"]))
            pending = None
    return system, history, action_of(turns[-1]["content"])


class RetrievalBackend(Backend):
    """BM25 nearest past turn of the request's domain (see the module doc)."""

    name = "retrieval"

    def __init__(
        self,
        source: str | Path,
        *,
        domain: str | None = None,
        context_turns: int = 2,
        context_weight: float = 0.3,
        adapt: bool = True,
    ):
        self.source = Path(source)
        self.domain = get_domain(domain).name if domain else None
        self.adapt = adapt
        turns = load_turns(self.source)
        if self.domain:
            turns = {self.domain: turns.get(self.domain, [])}
        if not any(turns.values()):
            where = f" for domain {self.domain}" if self.domain else ""
            raise BackendError(f"no turns to index in {self.source}{where}")
        self._indexes = build_indexes(turns, context_turns, context_weight)
        flags = "" if adapt else ":raw"
        self._model_id = f"bm25:{self.source.name}@{source_digest(self.source)}:ctx{context_turns}x{context_weight:g}{flags}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def num_docs(self) -> dict[str, int]:
        return {d: len(index.turns) for d, index in self._indexes.items()}

    def resolve_domain(self, domain: str | None) -> str:
        """The index a request with ``domain`` is answered from; BackendError when the
        domain is unknown, not indexed, or not given and not implied."""
        if domain is not None:
            if domain not in DOMAINS:
                raise BackendError(f"unknown domain {domain!r}: one of {', '.join(DOMAINS)}")
            if domain not in self._indexes:
                raise BackendError(
                    f"the retrieval index over {self.source} has no {domain} turns (it holds: "
                    f"{', '.join(self._indexes)}); index {domain} trajectories for it"
                )
            return domain
        if self.domain:
            return self.domain
        if len(self._indexes) == 1:
            return next(iter(self._indexes))
        raise BackendError(
            f"which domain? the retrieval index over {self.source} holds {', '.join(self._indexes)} and never "
            "answers across domains: pass the request's domain (WorldModel.predict(..., domain=D), the JSON "
            "field \"domain\" of a served request) or fix one with the option domain=D"
        )

    def nearest(
        self, messages: list[Message], k: int = 1, *, domain: str | None = None
    ) -> list[tuple[float, PastTurn]]:
        """The ``k`` best past turns of the request's domain for the action in ``messages``, best first."""
        _, history, action = query_of(messages)
        return self._indexes[self.resolve_domain(domain)].search(action, history, k)

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        n = config.n or 1
        # BM25 is CPU work: in a thread, so a long query never stalls the event loop.
        hits = await asyncio.to_thread(self.answers, messages, n, domain)
        return [Completion(text=text, finish_reason="stop") for text in hits]

    def answers(self, messages: list[Message], n: int = 1, domain: str | None = None) -> list[str]:
        """The ``n`` answers :meth:`complete` gives, computed in this thread."""
        dom = self.resolve_domain(domain)
        _, history, action = query_of(messages)
        hits = self._indexes[dom].search(action, history, n)
        turns = [hits[i % len(hits)][1] for i in range(n)]
        # A past turn with reasoning (a thinking-style target) is answered with its reasoning too.
        return [
            format_observation(adapt_observation(dom, t, action, history) if self.adapt else t.observation, t.reasoning)
            for t in turns
        ]

