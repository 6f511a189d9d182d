"""The LLM judge: any backend (usually an OpenAI-compatible endpoint) scores predictions.

Two request styles (:mod:`agentworld.judge.prompt`). ``published`` sends the published
evaluation's request exactly: its messages, temperature 0.6 and 32,768 max tokens and no
other sampling field, the same request on every attempt. ``agentworld`` sends ours at
temperature 0 with 1,024 max tokens, and retries an unparsable verdict with another seed
and a warmer temperature (a deterministic server would otherwise repeat the same bad
text). Settings the user gives override either style's.

What is judged follows the published script: the parsed observation -- never the
reasoning -- a truncated answer's partial text included. A prediction with nothing to
judge (a failed call; no answer at all) is not sent, and its verdict says why it was
left out (:func:`left_out`), so scores count it apart instead of averaging it in. After
the last attempt an unparsable verdict is recorded as failed, with the raw text kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from agentworld.judge.base import DIMENSIONS, Judgement
from agentworld.judge.prompt import (
    AGENTWORLD_HISTORY_TURNS,
    JUDGE_PROMPT_VERSION,
    JudgePrompts,
    judge_messages,
    published_judge_messages,
)
from agentworld.models.base import Backend, GenerationConfig, Message
from agentworld.models.runner import WorldModel
from agentworld.parsing import parse_judgement, verdict_scores

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.prediction import Prediction

JudgeStyle = Literal["published", "agentworld"]
JUDGE_STYLES: tuple[JudgeStyle, ...] = ("published", "agentworld")

JUDGE_DEFAULTS: dict[str, GenerationConfig] = {
    "published": GenerationConfig(temperature=0.6, max_tokens=32768, n=1),
    "agentworld": GenerationConfig(temperature=0.0, max_tokens=1024, n=1),
}
"""Each style's sampling settings; nothing else (no top_p, no seed) is sent unless set."""

LEFT_OUT = "left_out"
"""Key of a verdict's ``details`` naming why its prediction was not judged."""


def left_out(error: str | None, status: str, observation: str | None) -> str | None:
    """Why a prediction is left out of judging and of every mean, or None when it is judged:
    ``failed`` (the call failed) or ``missing`` (no answer: an empty output, or nothing
    outside the reasoning). Truncated and unclosed answers are judged as they were cut,
    as the published script judges them."""
    if error is not None:
        return "failed"
    if observation is None and str(status) in ("missing", ""):
        return "missing"
    return None


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return "" if value is None else str(value)


def judgement_from_data(judge: str, data: dict[str, Any], raw: str, *, prompt_version: str = JUDGE_PROMPT_VERSION) -> Judgement:
    """A judgement from the parsed verdict object (scores nested or flat, read leniently)."""
    return Judgement(
        judge=judge,
        scores=verdict_scores(data, DIMENSIONS),
        strengths=_text(data.get("strengths")),
        weaknesses=_text(data.get("weaknesses")),
        content_type=_text(data.get("content_type")) or None,
        raw=raw,
        details={"prompt_version": prompt_version},
    )


class LLMJudge:
    """Scores predictions with a language model, in the ``published`` request style (the
    default when ``prompts`` are given: they are the published files) or ``agentworld``."""

    def __init__(
        self,
        model: WorldModel | Backend,
        *,
        name: str | None = None,
        retries: int = 2,
        config: GenerationConfig | None = None,
        retry_temperature: float = 0.7,
        history_turns: int = AGENTWORLD_HISTORY_TURNS,
        prompts: JudgePrompts | None = None,
        style: JudgeStyle | None = None,
    ):
        style = style or ("published" if prompts is not None else "agentworld")
        if style not in JUDGE_STYLES:
            raise ValueError(f"unknown judge style {style!r}: expected {' or '.join(JUDGE_STYLES)}")
        if style == "published" and (prompts is None or prompts.user_template is None):
            where = f"in {prompts.folder}" if prompts is not None else "(no judge prompts given)"
            raise ValueError(f"the published judge request needs the published judge user template; none found {where}")
        self.wm = model if isinstance(model, WorldModel) else WorldModel(model)
        self.name = name or f"{self.wm.backend.name}:{self.wm.model_id}"
        self.style: JudgeStyle = style
        self.retries = retries
        self.config = JUDGE_DEFAULTS[style].merged(config)
        self.retry_temperature = retry_temperature
        self.history_turns = history_turns
        self.prompts = prompts
        """The user's published judge prompts from ``--judge-prompts`` (None: ours only)."""

    @property
    def settings(self) -> dict[str, Any]:
        """What a stored verdict of this judge depends on, checked when a run resumes."""
        resolved = self.wm.settings(self.config).to_dict()
        resolved.pop("n", None)
        if self.style == "published" and self.prompts is not None:
            version = self.prompts.published_identity  # the style shows in its prefix
        else:
            version = self.prompts.identity if self.prompts else JUDGE_PROMPT_VERSION
        return {"backend": self.wm.backend.name, "model": self.wm.model_id, "prompt_version": version, **resolved}

    def _request(self, sample: BenchSample, observation: str) -> tuple[list[Message], str]:
        """The messages for one prediction and the prompt version its verdict records."""
        if self.style == "published" and self.prompts is not None:
            return published_judge_messages(sample, observation, self.prompts), self.prompts.published_version(sample.domain)
        system = self.prompts.system(sample.domain) if self.prompts else None
        version = self.prompts.version(sample.domain) if self.prompts else JUDGE_PROMPT_VERSION
        return judge_messages(sample, observation, history_turns=self.history_turns, system_prompt=system), version

    def _attempt_config(self, attempt: int) -> GenerationConfig:
        if not attempt or self.style == "published":
            return self.config  # the published script asks again with the same request
        cfg = self.config
        return cfg.merged(GenerationConfig(seed=(cfg.seed or 0) + attempt, temperature=max(cfg.temperature or 0.0, self.retry_temperature)))

    async def score(self, sample: BenchSample, prediction: Prediction) -> Judgement:
        why = left_out(prediction.error, prediction.status, prediction.observation)
        if why is not None or prediction.observation is None:
            return Judgement(
                judge=self.name,
                error=f"left out, not judged: {prediction.error or 'no answer'}",
                details={LEFT_OUT: why or "missing", "status": str(prediction.status)},
            )
        try:
            messages, version = self._request(sample, prediction.observation)
        except ValueError as exc:  # the user's prompt files lack this domain
            return Judgement.failed(self.name, str(exc))
        errors: list[str] = []
        prompt_tokens = completion_tokens = 0
        raw = ""
        for attempt in range(self.retries + 1):
            [reply] = (await self.wm.predict(messages, self._attempt_config(attempt)))[:1]
            prompt_tokens += reply.prompt_tokens or 0
            completion_tokens += reply.completion_tokens or 0
            if reply.error:
                errors.append(reply.error)
                continue
            raw = reply.text
            parsed = parse_judgement(raw)
            if not parsed.ok or parsed.data is None:
                errors.append(parsed.error or "unparsable verdict")
                continue
            j = judgement_from_data(self.name, parsed.data, raw, prompt_version=version)
            if j.total is None:
                errors.append("no valid score in the verdict")
                continue
            return j.model_copy(update={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "attempts": attempt + 1})
        return Judgement.failed(
            self.name,
            f"{len(errors)} attempt(s) failed: " + " | ".join(errors[-3:]),
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            attempts=self.retries + 1,
            details={"prompt_version": version},
        )

    async def aclose(self) -> None:
        await self.wm.aclose()
