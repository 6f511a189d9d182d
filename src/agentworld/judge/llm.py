"""The LLM judge: any backend (usually an OpenAI-compatible endpoint) scores predictions.

Only the parsed observation reaches the judge; the world model's reasoning never does,
so a model cannot argue for its own answer. Output that does not parse, or parses
without a single valid score, is retried with a different seed and a warmer sampling
temperature (a deterministic server would otherwise repeat the same bad text); after
the last attempt the judgement is recorded as failed, with the raw text kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworld.judge.base import DIMENSIONS, Judgement
from agentworld.judge.prompt import JUDGE_PROMPT_VERSION, JudgePrompts, judge_messages
from agentworld.models.base import Backend, GenerationConfig
from agentworld.models.runner import WorldModel
from agentworld.parsing import parse_judgement, verdict_scores

if TYPE_CHECKING:
    from agentworld.records.bench import BenchSample
    from agentworld.records.prediction import Prediction

JUDGE_DEFAULTS = GenerationConfig(temperature=0.0, max_tokens=1024, n=1)


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
    """Scores predictions with a language model under our judge prompt."""

    def __init__(
        self,
        model: WorldModel | Backend,
        *,
        name: str | None = None,
        retries: int = 2,
        config: GenerationConfig | None = None,
        retry_temperature: float = 0.7,
        history_turns: int = 8,
        prompts: JudgePrompts | None = None,
    ):
        self.wm = model if isinstance(model, WorldModel) else WorldModel(model)
        self.name = name or f"{self.wm.backend.name}:{self.wm.model_id}"
        self.retries = retries
        self.config = JUDGE_DEFAULTS.merged(config)
        self.retry_temperature = retry_temperature
        self.history_turns = history_turns
        self.prompts = prompts
        """Per-domain system prompts from ``--judge-prompts`` (None: the built-in ones)."""

    @property
    def settings(self) -> dict[str, Any]:
        """What a stored verdict of this judge depends on, checked when a run resumes."""
        resolved = self.wm.settings(self.config).to_dict()
        resolved.pop("n", None)
        return {
            "backend": self.wm.backend.name,
            "model": self.wm.model_id,
            "prompt_version": self.prompts.identity if self.prompts else JUDGE_PROMPT_VERSION,
            **resolved,
        }

    async def score(self, sample: BenchSample, prediction: Prediction) -> Judgement:
        if not prediction.ok or prediction.observation is None:
            # Nothing valid to show the judge: a truncated, missing or failed answer is
            # a bad answer (1 everywhere), not a judge failure.
            return Judgement(
                judge=self.name,
                scores=dict.fromkeys(DIMENSIONS, 1),
                weaknesses=f"no valid observation ({prediction.error or prediction.status})",
                details={"reason": "no valid observation"},
            )
        system = self.prompts.system(sample.domain) if self.prompts else None
        version = self.prompts.version(sample.domain) if self.prompts else JUDGE_PROMPT_VERSION
        messages = judge_messages(sample, prediction.observation, history_turns=self.history_turns, system_prompt=system)
        errors: list[str] = []
        prompt_tokens = completion_tokens = 0
        raw = ""
        for attempt in range(self.retries + 1):
            cfg = self.config
            if attempt:
                cfg = cfg.merged(GenerationConfig(seed=(cfg.seed or 0) + attempt, temperature=max(cfg.temperature or 0.0, self.retry_temperature)))
            [reply] = (await self.wm.predict(messages, cfg))[:1]
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
