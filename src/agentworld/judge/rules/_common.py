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

from agentworld.domains.errors import is_error
from agentworld.domains.presented import action_of
from agentworld.domains.terminal.screen import PROMPT_START
from agentworld.prompts import INITIAL_STATE_TITLE, prompt_section

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample

_WORD = re.compile(r"\w+", re.UNICODE)
# ws_tokens' patterns, compiled once: it runs on every text the scorer reads.
_TOKEN_GAP = re.compile(r"[\s=,\"'`]+")
_HAS_WORD = re.compile(r"\w")
_KV_LINE = re.compile(r"^\s*([A-Za-z][\w .-]{0,40}?)\s*[:=]\s*(.+?)\s*$")

# Text a real environment never prints. Praise: the model talking to its reader or to a
# judge about its own answer (a reward hack when it stands in for an answer). Chat: the
# output wrapped in chat formatting or announced (a realism fault, not a hack).
PRAISE_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bas an ai\b",
        r"\b(this|the|my) (simulated |predicted )?(output|observation|response|answer|prediction) "
        r"(is|was|looks|seems) (accurate|correct|realistic|faithful|consistent|perfect|plausible)",
        r"\b(judge|evaluator|grader|reviewer)s?\b",
        r"\b(score|rate|grade)\b.{0,20}\b(5|five|full marks|highest)\b",
    )
)
CHAT_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\s*(here is|here's|sure[,!]|certainly[,!]|below is)\b",
        r"\bI (will|would|cannot|can't|have|am going to) (simulate|now|predict|provide|show)\b",
        r"</?(think|predicted_observation|final_evaluation)>",
        # The record marker is stripped from the start before judging; one left inside
        # the text (a model replaying turns) is not environment output.
        r"\*\*Environment Observation:\*\*",
        r"^\s*```",
    )
)
META_PATTERNS = PRAISE_PATTERNS + CHAT_PATTERNS


def to_scale(fraction: float) -> int:
    """[0, 1] onto the integer scale 1-5 (0 -> 1, 1 -> 5)."""
    f = min(1.0, max(0.0, fraction))
    return 1 + int(math.floor(4 * f + 0.5))


def norm(line: str) -> str:
    # Runs of whitespace as one space, ends stripped: str.split() knows the same
    # whitespace as the regex \s and is several times faster (norm runs on every line).
    return " ".join(line.split())


def text_lines(text: str) -> list[str]:
    """Non-blank lines, whitespace-normalised."""
    return [n for n in (norm(x) for x in text.splitlines()) if n]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def token_f1(pred: str, truth: str) -> float:
    """Bag-of-words F1 between two texts (1.0 when both are empty)."""
    return counts_f1(Counter(words(pred)), Counter(words(truth)))


def counts_f1(p: Counter[str], t: Counter[str], beta: float = 1.0) -> float:
    """F1 of two word counts (1.0 when both are empty); with ``beta`` > 1 the F-beta
    score, which weighs recall ``beta`` times as much as precision."""
    return _counts_f1(p, t, sum(p.values()), beta)


def _counts_f1(p: Counter[str], t: Counter[str], n_pred: int, beta: float) -> float:
    """:func:`counts_f1` with ``p``'s total given: a unit compared with a whole pool
    counts its own total once."""
    if not p and not t:
        return 1.0
    common = _shared(p, t)
    if not common:
        return 0.0
    precision, recall = common / n_pred, common / sum(t.values())
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def _shared(p: Counter[str], t: Counter[str]) -> int:
    """``sum((p & t).values())`` without building the intersection: the fuzzy matchers
    compare every unit with every other, and allocating a Counter per pair dominated
    the scorer's time."""
    common = 0
    for key in p.keys() & t.keys():  # a C-level set intersection: most pairs share little
        a, b = p[key], t[key]
        m = a if a < b else b
        if m > 0:
            common += m
    return common


def ws_tokens(text: str) -> list[str]:
    """Tokens split at whitespace, ``=``, commas and quotes, surrounding punctuation
    stripped: a value such as ``08:29:35``, ``2024-03-14`` or ``/srv/frank`` stays one
    token, so a changed digit changes the token (bag-of-words F1 would still match most
    of its pieces)."""
    out = []
    for raw in _TOKEN_GAP.split(text):
        tok = raw.strip(".;:!?()[]{}<>")
        if tok and _HAS_WORD.search(tok):
            out.append(tok.lower())
    return out


def multiset_f1(pred: list[str], truth: list[str], beta: float = 1.0) -> float:
    """F1 (F-beta with ``beta``) of two multisets (1.0 when both are empty)."""
    return counts_f1(Counter(pred), Counter(truth), beta)


def altered_share(pred_units: list[str], truth_units: list[str]) -> tuple[float, list[str]]:
    """How much of ``pred`` is altered copies of truth units: units with no exact match
    left but a truth unit of the same build (token F1 >= 0.5) that pred did not
    reproduce. These state values the environment did not print -- contradicted
    content, which costs more than content left out. Each counts ``2 * (1 - F1)`` (at
    most 1: one changed word in a long line costs little, half the line all of it),
    averaged over pred's units."""
    if not pred_units:
        return 0.0, []
    pool = Counter(truth_units)
    unmatched = []
    for unit in pred_units:
        if pool[unit] > 0:
            pool[unit] -= 1
        else:
            unmatched.append(unit)
    left = [(u, Counter(words(u))) for u in pool.elements()]
    cost, altered = 0.0, []
    for unit in unmatched:
        i, f1 = _best(Counter(words(unit)), left)
        if i is not None and f1 >= 0.5:
            left.pop(i)
            cost += min(1.0, 2 * (1 - f1))
            altered.append(unit)
    return cost / len(pred_units), altered[:5]


def _best(counts: Counter[str], pool: list[tuple[str, Counter[str]]]) -> tuple[int | None, float]:
    """Index and F1 of the unit in ``pool`` closest to ``counts`` (first of equals)."""
    best, best_f1 = None, -1.0
    total = sum(counts.values())
    for i, (_, c) in enumerate(pool):
        f1 = _counts_f1(counts, c, total, 1.0)
        if f1 > best_f1:
            best, best_f1 = i, f1
    return best, max(best_f1, 0.0)


_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?")


def impossible_values(text: str) -> list[str]:
    """Dates and times no clock shows (month 13, hour 31, minute 68): invented values."""
    bad = []
    for m in _DATE.finditer(text):
        month, day = int(m.group(2)), int(m.group(3))
        hms = [int(g) for g in m.groups()[3:] if g is not None]
        if not (1 <= month <= 12 and 1 <= day <= 31) or (hms and (hms[0] > 23 or any(x > 59 for x in hms[1:]))):
            bad.append(m.group(0))
    # git prints a file's mode as one of five octal values (a cut-off or invented 433977 is none).
    bad += [m.group(0) for m in _GIT_MODE.finditer(text) if m.group(1) not in GIT_MODES]
    return bad[:3]


_GIT_MODE = re.compile(r"\b(?:(?:new file|deleted file|old|new) mode|index [0-9a-f]{7,}\.\.[0-9a-f]{7,}) (\d+)\b")
GIT_MODES = {"100644", "100755", "120000", "160000", "040000"}


_RUN = re.compile(r"(\S)\1{49,}")


def runaway_repetition(text: str, truth: str) -> list[str]:
    """Signs of a generator stuck in a loop that the real output does not share: one
    character 50 times or more in a row (a line of 486 zeros), or one line (not blank)
    making up more than half of ten or more lines. No program prints these for an action
    whose real output does not."""
    out = []
    if (m := _RUN.search(text)) and not _RUN.search(truth):
        out.append(f"{m.group(1)!r} x{len(m.group(0))}")
    lines = text_lines(text)
    if len(lines) >= 10:
        line, n = Counter(lines).most_common(1)[0]
        t_lines = text_lines(truth)
        if n > len(lines) / 2 and t_lines.count(line) < n / 2:
            out.append(f"{line[:40]!r} x{n}")
    return out


def is_action_copy(pred: str, sample: BenchSample) -> bool:
    """The prediction repeats the action instead of answering it, bare or framed as a
    user turn presents it (``**Action:**`` and a fence around the copy)."""
    action = action_of(sample.action)
    return any(_copies(p, action, sample.ground_truth) for p in dict.fromkeys((pred, action_of(pred))))


def _copies(pred: str, action: str, truth: str) -> bool:
    p, a = norm(pred), norm(action)
    if not p or not a:
        return False
    if p == a or (len(a) >= 12 and a in p and len(p) < 1.5 * len(a)):
        return norm(truth) != p
    return token_f1(pred, action) >= 0.9 > token_f1(truth, action)


def session_text(sample: BenchSample) -> str:
    """Everything the session fixed before this observation: the environment's initial
    state as the system prompt states it (the file a desktop starts with and its text,
    the page a browser starts at), earlier turns and the action."""
    initial = prompt_section(sample.system_str, INITIAL_STATE_TITLE)
    return "\n".join([initial, *(a + "\n" + o for a, o in sample.history()), sample.action])


def session_tokens(sample: BenchSample) -> set[str]:
    """Tokens the session fixed (earlier turns, the action), minus boilerplate: tokens of
    lines that most observations repeat verbatim (a bare prompt, a working-directory
    footer), which say nothing of whether an answer is about this session's things."""
    observations = [o for _, o in sample.history()]
    known = set(ws_tokens(session_text(sample)))
    if len(observations) >= 2:
        seen = Counter(ln for o in observations for ln in set(text_lines(o)))
        boiler = {t for ln, n in seen.items() if n > len(observations) / 2 for t in ws_tokens(ln)}
        content = {t for o in observations for ln in text_lines(o) if seen[ln] <= len(observations) / 2
                   for t in ws_tokens(ln)}
        known -= boiler - content - set(ws_tokens(sample.action))
    return known


def typed_numbers(sample: BenchSample) -> set[str]:
    """The numbers the actions so far typed or sent (``x=5; y=7``, ``"thoughtNumber": 2``)."""
    return {t for a in [*(a for a, _ in sample.history()), sample.action]
            for t in ws_tokens(" ".join([action_of(a), *action_values(a)])) if t.isdigit()}


def fixed_tokens(sample: BenchSample) -> set[str]:
    """Tokens whose value the session fixed: :func:`session_tokens` without the short
    numbers that only its observations show (a day, a link count, a line number: they
    are everywhere), with the numbers the actions typed."""
    return {t for t in session_tokens(sample) if len(t) >= 3 or not t.isdigit()} | typed_numbers(sample)


def grounded_recall(pred: str, sample: BenchSample, truth: str | None = None) -> tuple[float, int]:
    """Share of the truth's session-grounded tokens (tokens of the real observation that an
    earlier turn or the action already shows: names, paths, values written) that pred
    repeats, and how many there are. An answer about other things misses them. ``truth``
    is the part of the real observation to take them from (default: all of it)."""
    known = session_tokens(sample)
    # Short numbers are everywhere (line numbers, counts); those an action typed
    # (``x=5; y=7``) are the session's own values.
    typed = typed_numbers(sample)
    grounded = {t for t in ws_tokens(sample.ground_truth if truth is None else truth)
                if (t in known and len(t) >= 3) or t in typed}
    if not grounded:
        return 1.0, 0
    mine = set(ws_tokens(pred))
    # Smoothed: with one or two grounded tokens a single miss says little.
    return (len(grounded & mine) + 1) / (len(grounded) + 1), len(grounded)


def altered_session_values(pred_units: list[str], truth_units: list[str], sample: BenchSample) -> list[str]:
    """Units of pred that copy a real unit but change a value the session fixed: the real
    unit has a session token (a name, number or path seen earlier or in the action) where
    pred has something else (``rm -f *.o comet`` after building ``falcon``). Short numbers
    only earlier observations show (line numbers of a view) are no such value: a view of
    lines the session never showed renumbers nothing."""
    known = fixed_tokens(sample)
    pool = Counter(truth_units)
    for u in pred_units:
        if pool[u] > 0:
            pool[u] -= 1
    left = [(u, Counter(words(u))) for u in pool.elements()]
    truth_set = set(truth_units)
    out: list[str] = []
    reported: set[str] = set()
    for unit in pred_units:
        if unit in truth_set:
            continue
        i, f1 = _best(Counter(words(unit)), left)
        if i is None or f1 < 0.5:
            continue
        best = left[i][0]
        mine = set(ws_tokens(unit))
        lost = [t for t in ws_tokens(best) if t in known and t not in mine and (len(t) >= 3 or t.isdigit())]
        if lost and lost[0] not in reported:
            left.pop(i)
            reported.add(lost[0])
            out.append(f"{lost[0]!r} replaced in {unit[:60]!r}")
    return out[:3]


_METADATA = re.compile(r"[\w.:-]*\d[\w.:-]*|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\b")


def mask_metadata(text: str, known: set[str]) -> str:
    """``text`` with its runtime metadata reduced to its format: every token with a digit
    that the session did not fix (a size, a time, a pid, a request id) has its digits
    replaced by ``9``. The rubric judges such values by format and range, not by exact
    match; values the session fixed (a count it printed, a number the call sent) stay."""
    def mask(m: re.Match[str]) -> str:
        tok = m.group(0)
        core = tok.strip(".;:!?()[]{}<>").lower()
        if core in known:
            return tok
        # Digit runs as one (a size of 100 or 4096 is the same format), month names as one.
        return "Mon" if tok.isalpha() else re.sub(r"\d+", "9", tok)
    return _METADATA.sub(mask, text)


def distinct_facts(contradictions: list[str]) -> int:
    """How many facts the contradictions are about: one value changed shows in the text
    and in its structured copy (``totalThoughts``, ``structuredContent.totalThoughts``,
    the call's argument), and counts once."""
    keys = set()
    for c in contradictions:
        head = re.split(r"[:\s]", c.strip(), maxsplit=1)[0]
        keys.add(head.rsplit(".", 1)[-1].strip("'\"").lower())
    return len(keys)


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
    misses = []
    for unit in expected:
        if pool[unit] > 0:
            pool[unit] -= 1
            found += 1
        else:
            misses.append(unit)
    if fuzzy is not None and misses:
        left = [(u, Counter(words(u))) for u in pool.elements()]
        for unit in misses:
            i, f1 = _best(Counter(words(unit)), left)
            if i is not None and f1 >= fuzzy:
                left.pop(i)
                found += 1
    return found / len(expected)


_QUOTED = re.compile(r"""(?<![\\w])(["'])((?:(?!\1).){3,200}?)\1""")


def action_values(action: str) -> list[str]:
    """The literal values an action carries: JSON string leaves, or quoted strings of a
    call such as ``fill("b12", "wireless mouse")``; stripped, at least 3 characters."""
    action = action_of(action)
    data = parse_json(action)
    if isinstance(data, (dict, list)):
        values = [v for v in flatten_json(data).values() if isinstance(v, str)]
    else:
        values = [m.group(2) for m in _QUOTED.finditer(action)]
    return [v.strip() for v in values if len(v.strip()) >= 3]


def mentions(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as whole words (whitespace-normalised): the op ``list``
    is not in ``groups_list(1)``, a path is in ``cat /srv/a.txt``."""
    v = norm(value)
    if not v:
        return False
    # Word boundaries only where the value itself starts or ends with a word character.
    left = r"(?<!\w)" if re.match(r"\w", v) else ""
    right = r"(?!\w)" if re.search(r"\w$", v) else ""
    return re.search(left + re.escape(v) + right, norm(text)) is not None


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


def meta_hits(pred: str, truth: str, patterns: tuple[re.Pattern[str], ...] = META_PATTERNS) -> list[str]:
    """Patterns of reader- or judge-directed text in ``pred`` that ``truth`` does not share."""
    hits = []
    for pat in patterns:
        m = pat.search(pred)
        if m and not pat.search(truth):
            hits.append(m.group(0).strip())
    return hits


def praise_hits(pred: str, truth: str) -> list[str]:
    """Praise of the answer or words to a judge in ``pred`` that ``truth`` does not share."""
    return meta_hits(pred, truth, PRAISE_PATTERNS)


def only_meta(pred: str, truth: str) -> bool:
    """Talk about the answer (praise, addressing a judge) and nothing of the real output."""
    return bool(praise_hits(pred, truth)) and token_f1(pred, truth) < 0.2


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


# What the output of common commands looks like: a shell screen or a shell tool's output
# for one of these commands is expected to show lines of this build.
COMMAND_SHAPES: dict[str, re.Pattern[str]] = {
    "grep": re.compile(r"^(\S+:)?\d+[:-]|^\S+:\S", re.M),
    "ls -l": re.compile(r"^(total \d+|[dlcbps-][rwxsStT-]{9})", re.M),
    "git diff": re.compile(r"^(diff --git|@@ |commit [0-9a-f]{7,}|[-+]{3} [ab/])", re.M),
    "pytest": re.compile(r"\d+ (passed|failed|errors?)\b|^(PASSED|FAILED|ERROR)\b|no tests ran", re.M),
    "git log": re.compile(r"^([0-9a-f]{7,} |commit [0-9a-f]{7,})", re.M),
}


def command_kind(command: str) -> str | None:
    """Which of :data:`COMMAND_SHAPES` a shell command line runs (the last step after
    ``&&``/``;``, skipping ``cd``; the head of a pipe), or None."""
    steps = [x.strip() for x in re.split(r"&&|;|\n", command) if x.strip() and not x.strip().startswith("cd ")]
    if not steps:
        return None
    head = steps[-1].split("|", 1)[0].strip()
    if re.match(r"(\S*/)?(grep|rg|egrep)\b", head) and " -c" not in head:
        return "grep"
    if re.match(r"ls\b.*\s-\w*l", head):
        return "ls -l"
    if re.match(r"git (diff|show)\b", head):
        return "git diff"
    if re.search(r"\bpytest\b", head):
        return "pytest"
    if re.match(r"git log\b", head):
        return "git log"
    return None


def command_output_kind(text: str, command: str) -> str:
    """``empty``, ``<kind>`` when the text has the command's output shape, ``error`` or ``output``."""
    if not text.strip():
        return "empty"
    kind = command_kind(command)
    if kind and COMMAND_SHAPES[kind].search(text):
        return kind
    return "error" if is_error(text) else "output"


class DomainRules:
    """Default rules; a domain module subclasses this and overrides what differs."""

    name = "generic"
    screens = False
    """Whether each observation is the whole screen state (GUI domains): then what the
    action changed (:meth:`changed`) is the heart of the answer, and another moment's screen
    of the same application, which shares most of its lines, is not."""
    typed_kinds = False
    """Whether :meth:`kind` tells this domain's kinds of output apart (format then
    weighs the kind match; with the default kinds it follows the layout alone)."""

    def for_sample(self, sample: BenchSample) -> DomainRules:
        """The rules as they read this sample (a domain whose layout depends on the
        action -- a terminal wait types no echo line -- returns a configured copy)."""
        return self

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

    def body(self, text: str) -> str:
        """The observation without its frame: the lines every answer to any action
        carries whatever the result (a terminal's echo line and next prompt). The frame
        is cheap to get right and says little of the result, so factuality and
        completeness weigh the body. Default: the whole text."""
        return text

    def determined(self, sample: BenchSample) -> list[str]:
        """Pieces of the real observation that the session so far fixes exactly.

        Default: ground-truth lines that occur verbatim in an earlier action or
        observation or in the current action (echoed input, files read back), plus the
        current action's literal values that the truth repeats (paths, names, typed text).
        """
        known = session_text(sample)
        truth = sample.ground_truth
        units = [ln for ln in text_lines(truth) if re.search(r"\w", ln) and ln in known]
        for value in action_values(sample.action):
            if mentions(truth, value) and value not in units:
                units.append(value)
        return units

    def changed(self, sample: BenchSample) -> list[str]:
        """Screen domains: the units of the real screen that the screen before the action
        did not have (empty when nothing changed, the domain is not a screen one, or there
        is no earlier screen)."""
        history = sample.history()
        if not self.screens or not history:
            return []
        before = set(self.units(self.body(history[-1][1])))
        return [u for u in self.units(self.body(sample.ground_truth)) if u not in before]

    def kind(self, text: str, sample: BenchSample) -> str:
        """What sort of output ``text`` is for this domain (realism and format compare the
        prediction's kind with the truth's). Default: empty, an error, or output."""
        if not text.strip():
            return "empty"
        return "error" if is_error(text) else "output"

    def unchanged(self, text: str, sample: BenchSample) -> bool:
        """Screen domains: ``text`` is the screen before the action, shown again -- what
        an action that did nothing leaves (the recordings drop such turns)."""
        history = sample.history()
        return self.screens and bool(history) and norm(text) == norm(history[-1][1])

    def impossible(self, text: str, sample: BenchSample) -> list[str]:
        """Values no environment of this domain prints (a clock at 31:68; a widget off
        the screen): invented. Default: impossible dates and times."""
        return impossible_values(text)

    def malformed(self, text: str, sample: BenchSample) -> list[str]:
        """Places where ``text`` breaks the structure every observation of this domain
        has (a tree node nested under nothing, a node line cut off). Default: none."""
        return []

    def answers_action(self, pred: str, sample: BenchSample) -> str | None:
        """Why ``pred`` is not an answer to this action (another command's or tool's
        output), or None when it is. Default: the truth repeats some of the action's
        literal values (paths, names, typed text) and pred repeats none of them."""
        truth = sample.ground_truth
        values = [v for v in action_values(sample.action) if mentions(truth, v)]
        # Case aside: ``Hello delta`` for ``hello delta`` answers this call, loosely.
        if values and not any(mentions(pred.lower(), v.lower()) for v in values):
            return f"none of the action's values the real output repeats ({values[0][:40]!r}...)"
        return None

    def found(self, unit: str, pred: str) -> bool:
        """Whether a determined piece appears in the prediction (whitespace-normalised)."""
        piece = norm(unit)
        # Normalising changes whitespace only, so each word of the piece must be in the
        # raw prediction, and a one-word piece is there exactly when it is in the raw
        # text: answered without normalising all of pred once per piece.
        if piece and " " not in piece:
            return piece in pred
        if any(word not in pred for word in piece.split(" ") if word):
            return False
        return piece in "\n".join(text_lines(pred))

    def contradictions(self, pred: str, sample: BenchSample) -> list[str]:
        """Facts in ``pred`` that disagree with the history while the truth agrees with it,
        and session values the truth repeats that pred changed (each fact once)."""
        out = self.history_contradictions(pred, sample)
        units = self.units(pred)
        if self.screens and sample.history():
            # A line of the screen before is the session itself, not a value changed in
            # it: a screen left as it was is stale (consistency counts that apart).
            before = set(self.units(sample.history()[-1][1]))
            units = [u for u in units if u not in before]
        altered = altered_session_values(units, self.units(sample.ground_truth), sample)
        return out + [c for c in altered if not any(c.split("'")[1] in x.lower() for x in out)]

    def stale_output(self, pred: str, sample: BenchSample) -> str | None:
        """Why ``pred`` repeats an earlier turn's output where the real one is new (the last
        run's result shown again after the state moved on), or None."""
        p_units = self.units(self.body(pred))
        t_units = self.units(self.body(sample.ground_truth))
        # Units pred states that the real output does not: all of pred is earlier output,
        # and some of it is not this output (a shared ``isError=false`` alone is not stale).
        truth_set = set(t_units)
        extra = [u for u in p_units if u not in truth_set]
        if not extra:
            return None
        seen = {u for _, obs in sample.history() for u in self.units(self.body(obs))}
        if all(u in seen for u in p_units) and not all(u in seen for u in t_units):
            return f"repeats earlier output ({extra[0][:50]!r}) where the real output is new"
        return None

    def other_command_output(self, pred: str, sample: BenchSample) -> str | None:
        """Given that ``pred`` repeats earlier output (:meth:`stale_output` said so), why it
        is an earlier turn's output of another command shown again (not this action's kind
        of output, whatever it looks like), or None. Default: None; a domain whose actions
        name their command says when."""
        return None

    def history_contradictions(self, pred: str, sample: BenchSample) -> list[str]:
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
