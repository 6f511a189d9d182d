"""The ``openai`` backend: any OpenAI-compatible chat endpoint.

vLLM, SGLang, llama.cpp server, Ollama, hosted APIs and ``agentworld serve`` all speak
this protocol. Settings come from arguments or environment variables
(``AGENTWORLD_BASE_URL``/``OPENAI_BASE_URL``, ``AGENTWORLD_API_KEY``/``OPENAI_API_KEY``,
``AGENTWORLD_MODEL``). Transient failures (429, 5xx, timeouts, dropped connections) and
malformed 200 answers (a body that is not JSON, no ``choices``, no choice, no content)
are retried with exponential backoff and full jitter; other errors fail at once.

The wire format is spoken with ``httpx`` directly rather than through the ``openai``
SDK: the SDK takes most of a second to import and several milliseconds per request to
re-validate the messages, which dominated short evaluation runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_STATUS_NAMES = {429: "RateLimitError"}
"""How a retryable status is named in errors (the names the SDK uses, for familiarity)."""


class MalformedResponse(BackendError):
    """A 200 answer that is not a usable chat completion; retried like a 5xx."""


class RetryableError(BackendError):
    """429, 5xx, a timeout or a dropped connection: worth another attempt."""


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


def _reasoning_of(message: dict[str, Any]) -> str | None:
    """Reasoning split out by the server's reasoning parser, under either common name."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def checked(body: Any) -> dict[str, Any]:
    """``body`` if it is a chat completion with content to parse, else raise
    :class:`MalformedResponse` saying what is wrong."""
    if not isinstance(body, dict) or "choices" not in body:
        raise MalformedResponse(f"200 response is not a chat completion: {str(body)[:80]!r}")
    choices = body["choices"]
    if not isinstance(choices, list):
        raise MalformedResponse("200 response without a choices list")
    if not choices:
        raise MalformedResponse("200 response with no choices")
    for c in choices:
        message = c.get("message") if isinstance(c, dict) else None
        if not isinstance(message, dict):
            raise MalformedResponse("200 response with a choice that has no message")
        # No content is an answer only when the token limit cut it (reasoning ate it all).
        if message.get("content") is None and c.get("finish_reason") != "length":
            raise MalformedResponse("200 response with null content")
    return body


def _error_message(response: httpx.Response) -> str:
    try:
        err = response.json().get("error")
        return str(err.get("message") if isinstance(err, dict) else err)
    except (ValueError, AttributeError):
        return response.text[:200]


class OpenAIBackend(Backend):
    """Chat completions over one pooled HTTP client, with our own retry policy."""

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
        send_domain: bool = False,
    ):
        self.model = model or _env("AGENTWORLD_MODEL", "OPENAI_MODEL")
        self.base_url = base_url or _env("AGENTWORLD_BASE_URL", "OPENAI_BASE_URL")
        key = api_key or _env("AGENTWORLD_API_KEY", "OPENAI_API_KEY")
        if not self.model:
            raise BackendError("no model name: write openai:MODEL@URL or set AGENTWORLD_MODEL")
        if not key:
            if not self.base_url:
                raise BackendError("no API key: set OPENAI_API_KEY or pass the option api_key=KEY (or give a local server: openai:MODEL@URL)")
            key = "EMPTY"  # local servers accept any key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.revision = revision
        self.extra_body = dict(extra_body or {})
        # Off by default: hosted APIs reject unknown body fields. An `agentworld serve`
        # endpoint reads it (a served retrieval floor needs the domain).
        self.send_domain = send_domain
        self.usage = Usage()
        self._rng = random.Random(jitter_seed)
        url = (self.base_url or DEFAULT_BASE_URL).rstrip("/") + "/"
        self.client = httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            # Loading the CA bundle costs ~0.1 s of start-up; a plain-http endpoint (a local
            # server) never opens a TLS connection, so it skips it. https is verified.
            verify=not url.startswith("http://"),
            # One connection per call in flight, whatever the concurrency.
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=256),
        )

    @property
    def model_id(self) -> str:
        return f"{self.model}@{self.revision}" if self.revision else str(self.model)

    def request(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> dict[str, Any]:
        """The JSON body of one chat-completions call (``domain`` goes in only with ``send_domain``)."""
        cfg = config.resolved()
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            if (value := getattr(cfg, name)) is not None:
                body[name] = value
        if (cfg.n or 1) > 1:
            body["n"] = cfg.n
        if cfg.stop:
            body["stop"] = list(cfg.stop)
        if cfg.top_k is not None:
            body["top_k"] = cfg.top_k  # not in the OpenAI schema; vLLM/SGLang read it from the body
        if self.send_domain and domain:
            body["domain"] = domain
        body.update(self.extra_body)
        return body

    def backoff(self, attempt: int, retry_after: str | None = None) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**attempt)], at least Retry-After."""
        delay = self._rng.uniform(0, min(self.backoff_max_s, self.backoff_s * 2**attempt))
        try:
            return max(delay, min(float(retry_after), self.backoff_max_s)) if retry_after else delay
        except ValueError:
            return delay

    async def _once(self, body: dict[str, Any]) -> dict[str, Any]:
        """One attempt: the checked completion, or a retryable / final error."""
        try:
            response = await self.client.post("chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise RetryableError(f"APITimeoutError: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise RetryableError(f"APIConnectionError: {type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            name = _STATUS_NAMES.get(status, "InternalServerError")
            err = RetryableError(f"{name}: HTTP {status}: {_error_message(response)}")
            err.retry_after = response.headers.get("retry-after")  # type: ignore[attr-defined]
            raise err
        if status != 200:
            raise BackendError(f"HTTP {status}: {_error_message(response)}")
        try:
            return checked(json.loads(response.content))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
            raise MalformedResponse(f"200 response body is not JSON: {response.content[:80]!r}") from exc

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, domain: str | None = None
    ) -> list[Completion]:
        body = self.request(messages, config, domain=domain)
        attempt = 0
        while True:
            self.usage.requests += 1
            try:
                response = await self._once(body)
                break
            except (RetryableError, MalformedResponse) as exc:
                self.usage.malformed += isinstance(exc, MalformedResponse)
                if attempt >= self.max_retries:
                    self.usage.failures += 1
                    raise BackendError(f"{exc} (after {attempt + 1} attempts)") from exc
                self.usage.retries += 1
                await asyncio.sleep(self.backoff(attempt, getattr(exc, "retry_after", None)))
                attempt += 1
            except BackendError:
                self.usage.failures += 1
                raise
        usage = response.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        total_completion = usage.get("completion_tokens")
        self.usage.prompt_tokens += prompt or 0
        self.usage.completion_tokens += total_completion or 0
        choices = sorted(response["choices"], key=lambda c: c.get("index", 0))
        # Usage counts all choices together; each choice gets an even share.
        share = round(total_completion / len(choices)) if total_completion is not None and choices else None
        return [
            Completion(
                text=c["message"].get("content") or "",
                reasoning=_reasoning_of(c["message"]),
                prompt_tokens=prompt,
                completion_tokens=total_completion if len(choices) == 1 else share,
                finish_reason=c.get("finish_reason"),
            )
            for c in choices
        ]

    async def aclose(self) -> None:
        await self.client.aclose()
