"""Measurements shared by the per-domain rules, and the defaults a domain may override.

Everything here compares text deterministically: no model, no randomness. Each
measurement returns a fraction in [0, 1]; :func:`to_scale` maps it onto the 1-5 scale.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentworld.domains.terminal.screen import PROMPT_START

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)
_KV_LINE = re.compile(r"^\s*([A-Za-z][\w .-]{0,40}?)\s*[:=]\s*(.+?)\s*$")

# Text a real environment never prints: the model talking to its reader (or to a judge),
# praising its own answer, or wrapping the output in chat formatting.
META_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bas an ai\b",
        r"\b(this|the|my) (simulated |predicted )?(output|observation|response|answer|prediction) "
        r"(is|was|looks|seems) (accurate|correct|realistic|faithful|consistent|perfect|plausible)",
        r"\b(judge|evaluator|grader|reviewer)s?\b",
        r"\b(score|rate|grade)\b.{0,20}\b(5|five|full marks|highest)\b",
        r"^\s*(here is|here's|sure[,!]|certainly[,!]|below is)\b",
        r"\bI (will|would|cannot|can't|have|am going to) (simulate|now|predict|provide|show)\b",
        r"</?(think|predicted_observation|final_evaluation)>",
        # The record marker is stripped from the start before judging; one left inside
        # the text (a model replaying turns) is not environment output.
        r"\*\*Environment Observation:\*\*",
        r"^\s*```",
    )
)


def to_scale(fraction: float) -> int:
    """[0, 1] onto the integer scale 1-5 (0 -> 1, 1 -> 5)."""
    f = min(1.0, max(0.0, fraction))
    return 1 + int(math.floor(4 * f + 0.5))


def norm(line: str) -> str:
    return _WS.sub(" ", line).strip()


def text_lines(text: str) -> list[str]:
    """Non-blank lines, whitespace-normalised."""
    return [n for n in (norm(x) for x in text.splitlines()) if n]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def token_f1(pred: str, truth: str) -> float:
    """Bag-of-words F1 between two texts (1.0 when both are empty)."""
    p, t = Counter(words(pred)), Counter(words(truth))
    if not p and not t:
        return 1.0
    common = sum((p & t).values())
    if not common:
        return 0.0
    precision, recall = common / sum(p.values()), common / sum(t.values())
    return 2 * precision * recall / (precision + recall)


def length_proportion(pred: str, truth: str) -> float:
    """1.0 for equal lengths, falling with the log of the ratio (half length -> 0.5)."""
    a, b = len(pred.strip()) + 1, len(truth.strip()) + 1
    return math.exp(-abs(math.log(a / b)))


def unit_recall(expected: list[str], got: list[str], *, fuzzy: float | None = None) -> float:
    """Share of ``expected`` units found in ``got`` (each unit of ``got`` used once).

    Exact match by default; with ``fuzzy`` a unit also counts when some unused unit of
    ``got`` has token F1 >= ``fuzzy`` with it.
    """
    if not expected:
        return 1.0
    pool = Counter(got)
    found = 0
    for unit in expected:
        if pool[unit] > 0:
            pool[unit] -= 1
            found += 1
        elif fuzzy is not None:
            best = max((c for c in pool if pool[c] > 0), key=lambda c: token_f1(c, unit), default=None)
            if best is not None and token_f1(best, unit) >= fuzzy:
                pool[best] -= 1
                found += 1
    return found / len(expected)


_QUOTED = re.compile(r"""(?<![\\w])(["'])((?:(?!\1).){3,200}?)\1""")


def action_values(action: str) -> list[str]:
    """The literal values an action carries: JSON string leaves, or quoted strings of a
    call such as ``fill("b12", "wireless mouse")``; stripped, at least 3 characters."""
    data = parse_json(action)
    if isinstance(data, (dict, list)):
        values = [v for v in flatten_json(data).values() if isinstance(v, str)]
    else:
        values = [m.group(2) for m in _QUOTED.finditer(action)]
    return [v.strip() for v in values if len(v.strip()) >= 3]


def line_shape(line: str) -> str:
    """A coarse signature of how a line is built: indentation and its leading token."""
    indent = len(line) - len(line.lstrip(" \t"))
    body = line.strip()
    if not body:
        return "blank"
    if re.match(r"^\[[^\]]+\]", body):
        lead = "[id]"
    elif re.match(r"^\d+\t", line.lstrip(" ")):
        lead = "numbered"
    elif body.startswith("<"):
        lead = "tag"
    elif PROMPT_START.match(body):
        lead = "prompt"
    elif _KV_LINE.match(body) and not body.startswith(("http", "/")):
        lead = "key:"
    elif body[0] in "{[":
        lead = "json"
    elif body[0].isalnum():
        lead = "word"
    else:
        lead = "symbol"
    return f"{min(indent, 12) // 2}:{lead}"


def shape_similarity(pred: str, truth: str) -> float:
    """Multiset Jaccard of line shapes: 1.0 when both texts are built alike."""
    p = Counter(line_shape(x) for x in pred.splitlines() if x.strip())
    t = Counter(line_shape(x) for x in truth.splitlines() if x.strip())
    if not p and not t:
        return 1.0
    return sum((p & t).values()) / max(1, sum((p | t).values()))


def meta_hits(pred: str, truth: str) -> list[str]:
    """Patterns of reader- or judge-directed text in ``pred`` that ``truth`` does not share."""
    hits = []
    for pat in META_PATTERNS:
        m = pat.search(pred)
        if m and not pat.search(truth):
            hits.append(m.group(0).strip())
    return hits


def flatten_json(value: Any, prefix: str = "") -> dict[str, str]:
    """Scalar leaves of a JSON value keyed by their path (``content.0.text``)."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(flatten_json(v, f"{prefix}{k}."))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(flatten_json(v, f"{prefix}{i}."))
    else:
        out[prefix.rstrip(".")] = json.dumps(value) if not isinstance(value, str) else value
    return out


def parse_json(text: str) -> Any:
    """Strict JSON (a real tool prints valid JSON; repairs would hide format errors)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None


def key_value_facts(text: str) -> dict[str, str]:
    """``key: value`` lines and JSON scalar fields, as facts an observation states."""
    data = parse_json(text)
    if isinstance(data, (dict, list)):
        facts = flatten_json(data)
        for leaf in list(facts.values()):
            if "\n" in leaf or ":" in leaf:
                facts.update({k: v for k, v in key_value_facts(leaf).items() if k not in facts})
        return facts
    facts = {}
    for line in text.splitlines():
        m = _KV_LINE.match(line)
        if m:
            facts.setdefault(norm(m.group(1)).lower(), norm(m.group(2)))
    return facts


class DomainRules:
    """Default rules; a domain module subclasses this and overrides what differs."""

    name = "generic"

    def format_fraction(self, pred: str, truth: str, sample: BenchSample) -> tuple[float, dict[str, Any]]:
        """How well ``pred`` follows the observation layout of ``truth`` (0-1) and why."""
        shape = shape_similarity(pred, truth)
        return shape, {"shape": round(shape, 3)}

    def facts(self, text: str) -> dict[str, str]:
        """Facts an observation states, keyed so that a later one can contradict them."""
        return key_value_facts(text)

    def units(self, text: str) -> list[str]:
        """The pieces completeness is counted in (default: non-blank lines)."""
        return text_lines(text)

    def determined(self, sample: BenchSample) -> list[str]:
        """Pieces of the real observation that the session so far fixes exactly.

        Default: ground-truth lines that occur verbatim in an earlier action or
        observation or in the current action (echoed input, files read back), plus the
        current action's literal values that the truth repeats (paths, names, typed text).
        """
        known = "\n".join([*(a + "\n" + o for a, o in sample.history()), sample.action])
        truth = sample.ground_truth
        units = [ln for ln in text_lines(truth) if re.search(r"\w", ln) and ln in known]
        for value in action_values(sample.action):
            if value in truth and value not in units:
                units.append(value)
        return units

    def found(self, unit: str, pred: str) -> bool:
        """Whether a determined piece appears in the prediction (whitespace-normalised)."""
        return norm(unit) in "\n".join(text_lines(pred))

    def contradictions(self, pred: str, sample: BenchSample) -> list[str]:
        """Facts in ``pred`` that disagree with the history while the truth agrees with it."""
        history: dict[str, str] = {}
        for _, obs in sample.history():
            history.update(self.facts(obs))
        truth, mine = self.facts(sample.ground_truth), self.facts(pred)
        out = []
        for key, value in mine.items():
            if key in history and key in truth and truth[key] == history[key] and value != history[key]:
                out.append(f"{key}: {value!r} but earlier {history[key]!r}")
        return out
