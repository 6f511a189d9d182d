"""The ``retrieval`` backend: a non-parametric floor every world model should beat.

It indexes past turns of a trajectory store (or a benchmark directory), one BM25 index
per domain, over the turn's action plus a little recent context, and answers an action
with the observation of the nearest past turn, in the output contract. No model, no
GPU, answers in milliseconds. Index the *training* trajectories: indexing the very
samples being evaluated would answer them with their own ground truth.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentworld.domains import DOMAINS, get_domain
from agentworld.jsonl import read_jsonl
from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message
from agentworld.parsing import parse_prediction, strip_marker
from agentworld.prompts import format_observation
from agentworld.records.bench import SUFFIX, BenchSample, as_text
from agentworld.records.trajectory import Trajectory

# Single-character words matter here (`ls -l`, `cd /`), so no stopwords and \w+ tokens.
_SPLITTER = r"(?u)\w+"


@dataclass(frozen=True)
class PastTurn:
    """A turn found in the source, with the turns before it."""

    history: list[tuple[str, str]]
    action: str
    observation: str
    reasoning: str | None = None


def context_text(history: list[tuple[str, str]], context_turns: int) -> str:
    """The last ``context_turns`` actions and observations before a turn."""
    recent = history[-context_turns:] if context_turns > 0 else []
    return "\n".join(f"{act}\n{obs}" for act, obs in recent)


class DomainIndex:
    """BM25 over one domain's past turns. A turn scores by its action plus, at a lower
    weight, its recent context: the action decides, the context breaks ties between
    turns that ran the same action in different states."""

    def __init__(self, turns: list[PastTurn], context_turns: int, context_weight: float):
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.turns = turns
        self.context_turns = context_turns
        self.context_weight = context_weight
        # bm25s wants dense token ids per index, so each index has its own vocabulary.
        self._parts = []
        for texts in ([t.action for t in turns], [context_text(t.history, context_turns) for t in turns]):
            tok = Tokenizer(lower=True, splitter=_SPLITTER, stopwords=None)
            index = bm25s.BM25()
            index.index(tok.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False), show_progress=False)
            self._parts.append((tok, index))

    def scores(self, action: str, history: list[tuple[str, str]]) -> np.ndarray:
        (atok, actions), (ctok, contexts) = self._parts
        out = actions.get_scores(atok.tokenize([action], update_vocab=False, return_as="ids", show_progress=False)[0])
        if self.context_weight and self.context_turns:
            query = context_text(history, self.context_turns)
            ids = ctok.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
            out = out + self.context_weight * contexts.get_scores(ids)
        return out


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


def load_turns(source: Path) -> dict[str, list[PastTurn]]:
    """Per domain, every distinct turn found under ``source``.

    ``*_test.jsonl`` files are read as AgentWorldBench samples (each evaluated turn once,
    duplicates across samples dropped), every other ``.jsonl`` file as trajectories.
    """
    out: dict[str, list[PastTurn]] = {}
    seen: set[str] = set()
    for path in _source_files(source):
        if path.name.endswith(SUFFIX):
            for s in read_jsonl(path, BenchSample).items:
                # Only complete (action, observation) turns: one list may run past the other.
                pairs = [(as_text(a), strip_marker(as_text(o))) for a, o in zip(s.prompt, s.response, strict=False)]
                _add(out, seen, s.domain, pairs, [None] * len(pairs))
        else:
            for traj in read_jsonl(path, Trajectory).items:
                pairs = [(t.action, t.observation) for t in traj.turns]
                _add(out, seen, traj.domain, pairs, [t.reasoning for t in traj.turns])
    return out


def _add(
    out: dict[str, list[PastTurn]], seen: set[str], domain: str, pairs: list[tuple[str, str]], reasoning: list[str | None]
) -> None:
    # Samples of one trajectory repeat its earlier turns: a turn is known by its whole
    # prefix, so each distinct past turn is indexed once.
    digest = hashlib.sha256(domain.encode())
    for t, (action, obs) in enumerate(pairs):
        digest.update(f"\x1e{action}\x1f{obs}".encode())
        key = digest.copy().hexdigest()
        if key not in seen:
            seen.add(key)
            out.setdefault(domain, []).append(PastTurn(pairs[:t], action, obs, reasoning[t]))


def query_of(messages: list[Message]) -> tuple[str | None, list[tuple[str, str]], str]:
    """``(system, history, action)`` read back from chat messages built by ``prompts``."""
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    turns = [m for m in messages if m["role"] in ("user", "assistant")]
    if not turns or turns[-1]["role"] != "user":
        raise BackendError("the last message must be the user's action")
    history: list[tuple[str, str]] = []
    pending: str | None = None
    for m in turns[:-1]:
        if m["role"] == "user":
            pending = m["content"]
        elif pending is not None:
            parsed = parse_prediction(m["content"])
            history.append((pending, parsed.observation if parsed.ok else m["content"]))
            pending = None
    return system, history, turns[-1]["content"]


class RetrievalBackend(Backend):
    """BM25 nearest past turn. ``domain`` fixes the index; otherwise it is read from the
    system prompt, and when that fails every domain's index is searched."""

    name = "retrieval"

    def __init__(
        self,
        source: str | Path,
        *,
        domain: str | None = None,
        context_turns: int = 2,
        context_weight: float = 0.3,
    ):
        self.source = Path(source)
        self.domain = get_domain(domain).name if domain else None
        turns = load_turns(self.source)
        if self.domain:
            turns = {self.domain: turns.get(self.domain, [])}
        if not any(turns.values()):
            where = f" for domain {self.domain}" if self.domain else ""
            raise BackendError(f"no turns to index in {self.source}{where}")
        self._indexes = {d: DomainIndex(t, context_turns, context_weight) for d, t in turns.items() if t}
        digest = hashlib.sha256()
        for p in _source_files(self.source):
            st = p.stat()
            digest.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
        self._model_id = f"bm25:{self.source.name}@{digest.hexdigest()[:12]}:ctx{context_turns}x{context_weight:g}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def num_docs(self) -> dict[str, int]:
        return {d: len(index.turns) for d, index in self._indexes.items()}

    def domain_of(self, system: str | None) -> str | None:
        if self.domain:
            return self.domain
        if system:
            for d in DOMAINS:
                if get_domain(d).environment in system and d in self._indexes:
                    return d
        return None

    def nearest(self, messages: list[Message], k: int = 1) -> list[tuple[float, PastTurn]]:
        """The ``k`` best past turns for the action in ``messages``, best first."""
        system, history, action = query_of(messages)
        domain = self.domain_of(system)
        found: list[tuple[float, PastTurn]] = []
        for dom in [domain] if domain else list(self._indexes):
            index = self._indexes[dom]
            scores = index.scores(action, history)
            # Stable sort: among equal scores the earlier turn in the store wins.
            for i in np.argsort(-scores, kind="stable")[:k]:
                found.append((float(scores[i]), index.turns[int(i)]))
        found.sort(key=lambda x: -x[0])
        return found[:k]

    async def complete(self, messages: list[Message], config: GenerationConfig) -> list[Completion]:
        n = config.n or 1
        # BM25 is CPU work: in a thread, so a long query never stalls the event loop.
        hits = await asyncio.to_thread(self.nearest, messages, n)
        # Fewer past turns than samples asked for: repeat the best ones. A past turn with
        # reasoning (a thinking-style target) is answered with its reasoning too.
        turns = [hits[i % len(hits)][1] for i in range(n)]
        return [Completion(text=format_observation(t.observation, t.reasoning), finish_reason="stop") for t in turns]
