"""The ``openai`` backend: any OpenAI-compatible chat endpoint.

vLLM, SGLang, llama.cpp server, Ollama, hosted APIs and ``agentworld serve`` all speak
this protocol. Settings come from arguments or environment variables
(``AGENTWORLD_BASE_URL``/``OPENAI_BASE_URL``, ``AGENTWORLD_API_KEY``/``OPENAI_API_KEY``,
``AGENTWORLD_MODEL``). Transient failures (429, 5xx, timeouts, dropped connections) and
malformed 200 answers (a body that is not JSON, no ``choices``, no choice, no content)
are retried with exponential backoff and full jitter; other errors fail at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from dataclasses import asdict, dataclass
from typing import Any

import openai

from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message

_RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)


class MalformedResponse(BackendError):
    """A 200 answer that is not a usable chat completion; retried like a 5xx."""


def checked(response: Any) -> Any:
    """``response`` if it is a chat completion with content to parse, else raise
    :class:`MalformedResponse` saying what is wrong (the SDK hands non-JSON bodies
    back as ``str`` and builds models from JSON missing required fields)."""
    if not hasattr(response, "choices"):
        text = response if isinstance(response, str) else type(response).__name__
        raise MalformedResponse(f"200 response is not a chat completion: {str(text)[:80]!r}")
    choices = response.choices
    if not isinstance(choices, list):
        raise MalformedResponse("200 response without a choices list")
    if not choices:
        raise MalformedResponse("200 response with no choices")
    for c in choices:
        message = getattr(c, "message", None)
        if message is None:
            raise MalformedResponse("200 response with a choice that has no message")
        # No content is an answer only when the token limit cut it (reasoning ate it all).
        if getattr(message, "content", None) is None and getattr(c, "finish_reason", None) != "length":
            raise MalformedResponse("200 response with null content")
    return response


@dataclass
class Usage:
    """What this backend has spent, for cost reports."""

    requests: int = 0
    retries: int = 0
    failures: int = 0
    malformed: int = 0
    """200 answers that were not usable completions (each retried or failed)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def _env(*names: str) -> str | None:
    return next((v for n in names if (v := os.environ.get(n))), None)


def _reasoning_of(message: Any) -> str | None:
    """Reasoning split out by the server's reasoning parser, under either common name."""
    for attr in ("reasoning_content", "reasoning"):
        value = getattr(message, attr, None)
        if value is None and message.model_extra:
            value = message.model_extra.get(attr)
        if isinstance(value, str) and value.strip():
            return value
    return None


class OpenAIBackend(Backend):
    """Chat completions through the official async client, with our own retry policy."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 6,
        backoff_s: float = 1.0,
        backoff_max_s: float = 60.0,
        revision: str | None = None,
        extra_body: dict[str, Any] | None = None,
        jitter_seed: int | None = None,
    ):
        self.model = model or _env("AGENTWORLD_MODEL", "OPENAI_MODEL")
        self.base_url = base_url or _env("AGENTWORLD_BASE_URL", "OPENAI_BASE_URL")
        key = api_key or _env("AGENTWORLD_API_KEY", "OPENAI_API_KEY")
        if not self.model:
            raise BackendError("no model name: pass --model or set AGENTWORLD_MODEL")
        if not key:
            if not self.base_url:
                raise BackendError("no API key: pass --api-key or set OPENAI_API_KEY (or point --base-url at a local server)")
            key = "EMPTY"  # local servers accept any key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.revision = revision
        self.extra_body = dict(extra_body or {})
        self.usage = Usage()
        self._rng = random.Random(jitter_seed)
        # The client's own retries are off: ours add jitter and count attempts.
        self.client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0)

    @property
    def model_id(self) -> str:
        return f"{self.model}@{self.revision}" if self.revision else str(self.model)

    def request(self, messages: list[Message], config: GenerationConfig) -> dict[str, Any]:
        """The keyword arguments of one chat-completions call."""
        cfg = config.resolved()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "timeout": self.timeout}
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            if (value := getattr(cfg, name)) is not None:
                kwargs[name] = value
        if (cfg.n or 1) > 1:
            kwargs["n"] = cfg.n
        if cfg.stop:
            kwargs["stop"] = list(cfg.stop)
        body = dict(self.extra_body)
        if cfg.top_k is not None:
            body["top_k"] = cfg.top_k  # not in the OpenAI schema; vLLM/SGLang read it from the body
        if body:
            kwargs["extra_body"] = body
        return kwargs

    def backoff(self, attempt: int, exc: Exception | None = None) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**attempt)], at least Retry-After."""
        delay = self._rng.uniform(0, min(self.backoff_max_s, self.backoff_s * 2**attempt))
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        try:
            return max(delay, min(float(retry_after), self.backoff_max_s)) if retry_after else delay
        except ValueError:
            return delay

    async def complete(self, messages: list[Message], config: GenerationConfig) -> list[Completion]:
        kwargs = self.request(messages, config)
        attempt = 0
        while True:
            self.usage.requests += 1
            try:
                response = checked(await self.client.chat.completions.create(**kwargs))
                break
            except (MalformedResponse, json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                self.usage.malformed += 1
                if attempt >= self.max_retries:
                    self.usage.failures += 1
                    raise MalformedResponse(f"malformed response after {attempt + 1} attempts: {exc}") from exc
                self.usage.retries += 1
                await asyncio.sleep(self.backoff(attempt))
                attempt += 1
            except _RETRYABLE as exc:
                if attempt >= self.max_retries:
                    self.usage.failures += 1
                    raise BackendError(f"{type(exc).__name__} after {attempt + 1} attempts: {exc}") from exc
                self.usage.retries += 1
                await asyncio.sleep(self.backoff(attempt, exc))
                attempt += 1
            except openai.APIStatusError as exc:
                self.usage.failures += 1
                raise BackendError(f"HTTP {exc.status_code}: {exc.message}") from exc
        usage = response.usage
        prompt = usage.prompt_tokens if usage else None
        total_completion = usage.completion_tokens if usage else None
        if usage:
            self.usage.prompt_tokens += usage.prompt_tokens or 0
            self.usage.completion_tokens += usage.completion_tokens or 0
        choices = sorted(response.choices, key=lambda c: c.index)
        # Usage counts all choices together; each choice gets an even share.
        share = round(total_completion / len(choices)) if total_completion is not None and choices else None
        return [
            Completion(
                text=c.message.content or "",
                reasoning=_reasoning_of(c.message),
                prompt_tokens=prompt,
                completion_tokens=total_completion if len(choices) == 1 else share,
                finish_reason=c.finish_reason,
            )
            for c in choices
        ]

    async def aclose(self) -> None:
        await self.client.close()
