"""An OpenAI-compatible HTTP server in front of any backend.

``POST /v1/chat/completions`` and ``GET /v1/models`` speak the OpenAI wire format, so
any tool with an OpenAI client can use the embedded model, a local checkpoint or the
retrieval baseline. Requests are handled concurrently; local backends batch whatever
arrives together. ``fail_rate`` makes a seeded share of requests fail with 429 or 503
(``fault="http"``), with a malformed 200 answer (``fault="malformed"``) or either
(``"mixed"``), for testing clients' retry logic against a real server; ``delay_s`` holds
every answer back, to stand in for a remote endpoint's latency. ``stream: true`` is
answered in the chat.completion.chunk SSE format (the text is generated first, then
sent in pieces).

Backends that cannot read the domain from the prompt (retrieval) need each request's
domain: the request's own ``domain`` field if it has one (not OpenAI's; the openai SDK
sends it as ``extra_body``), else the domain the system prompt names (every agentworld
system prompt opens by naming its domain's environment), else the server's
``default_domain`` (``agentworld serve --domain``), so a plain OpenAI client needs none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from agentworld.domains import DOMAINS, get_domain
from agentworld.models.base import Backend, BackendError, Completion, GenerationConfig, Message
from agentworld.parsing import split_reasoning as split_think
from agentworld.seeding import unit_hash
from agentworld.serving import RequestGuard, ServerPolicy


class ChatRequest(BaseModel):
    """The subset of the chat-completions request a world model uses; the rest is ignored."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[dict[str, Any]]
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    seed: int | None = None
    n: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    domain: str | None = None
    """Not OpenAI's: the caller's domain, passed to the backend (the retrieval floor needs it)."""

    def generation_config(self) -> GenerationConfig:
        stop = [self.stop] if isinstance(self.stop, str) else self.stop
        return GenerationConfig(
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            max_tokens=self.max_completion_tokens or self.max_tokens,
            seed=self.seed,
            n=self.n,
            stop=tuple(stop) if stop else None,
        ).resolved()

    def chat_messages(self) -> list[Message]:
        out = []
        for m in self.messages:
            content = m.get("content") or ""
            if isinstance(content, list):  # content parts: keep the text ones
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append({"role": str(m.get("role", "user")), "content": str(content)})
        return out


def prompt_domain(messages: list[Message]) -> str | None:
    """The domain an agentworld system prompt is written for, or None for another prompt.

    Every wording of :func:`agentworld.prompts.build_system_prompt` names the domain's
    environment in its opening paragraph (the role), before any section: only that
    paragraph is read, so a task or a tool schema that mentions another environment
    cannot decide it."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    role = system.split("\n\n", 1)[0].split("\n## ", 1)[0]
    found = sorted((at, name) for name in DOMAINS if (at := role.find(get_domain(name).environment)) >= 0)
    return found[0][1] if found else None


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind, "code": status}})


_NO_DOMAIN = (
    f". This request named no domain: send one of {', '.join(DOMAINS)} as the body field \"domain\" "
    "(openai SDK: extra_body={\"domain\": ...}), open with an agentworld system prompt "
    "(agentworld.build_system_prompt(domain)), or start the server with --domain"
)

FAULTS = ("http", "malformed", "mixed")
_MALFORMED = ("not_json", "bad_json", "no_choices", "empty_choices", "null_content")


def _malformed(kind: str, model: str) -> Response:
    """A 200 answer a client must not take as a completion."""
    if kind == "not_json":
        return Response("upstream hiccup", media_type="text/plain")
    if kind == "bad_json":
        return Response('{"id": "chatcmpl-x", "choices": [', media_type="application/json")
    base: dict[str, Any] = {"id": "chatcmpl-x", "object": "chat.completion", "created": int(time.time()), "model": model}
    if kind == "empty_choices":
        base["choices"] = []
    elif kind == "null_content":
        base["choices"] = [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]
    return JSONResponse(base)


def _injected_failure(seed: int, number: int, fault: str, served: str) -> Response:
    """The seeded failure for request ``number``: a malformed 200 answer, or a 429/503."""
    if fault == "malformed" or (fault == "mixed" and unit_hash(seed, "fault", number) < 0.5):
        pick = int(unit_hash(seed, "malformed", number) * len(_MALFORMED))
        return _malformed(_MALFORMED[min(pick, len(_MALFORMED) - 1)], served)
    if unit_hash(seed, "kind", number) < 0.5:
        return _error(429, "injected failure: rate limited", "rate_limit_error")
    return _error(503, "injected failure: overloaded", "server_error")


def _chat_completion(completions: list[Completion], served: str, *, split_reasoning: bool) -> dict[str, Any]:
    """The chat.completion answer for ``completions``, one choice each."""
    choices = []
    for i, c in enumerate(completions):
        content, reasoning = c.text, c.reasoning
        if split_reasoning:
            content, thought = split_think(content)
            content = content.strip("\n")
            reasoning = "\n".join(r for r in (reasoning, thought) if r) or None
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        choices.append({"index": i, "message": message, "finish_reason": c.finish_reason or "stop"})
    # All choices share one prompt: its tokens are counted once.
    prompt_tokens = (completions[0].prompt_tokens or 0) if completions else 0
    completion_tokens = sum(c.completion_tokens or 0 for c in completions)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _streamed(result: dict[str, Any], body: ChatRequest) -> StreamingResponse:
    # stream_options is not a declared field: the request model keeps extra keys as they came.
    options = getattr(body, "stream_options", None) or {}
    include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
    return StreamingResponse(iter(stream_chunks(result, include_usage=include_usage)), media_type="text/event-stream")


def _sse(data: dict[str, Any] | str) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)}\n\n"


def stream_chunks(completion: dict[str, Any], *, include_usage: bool, piece: int = 64) -> list[str]:
    """A finished chat.completion as the SSE events of a streamed one, ``[DONE]`` last."""
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    events = []
    for choice in completion["choices"]:
        i, message = choice["index"], choice["message"]
        events.append(_sse(head | {"choices": [{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}))
        reasoning = message.get("reasoning_content") or ""
        for k in range(0, len(reasoning), piece):
            events.append(_sse(head | {"choices": [{"index": i, "delta": {"reasoning_content": reasoning[k : k + piece]}, "finish_reason": None}]}))
        content = message.get("content") or ""
        for k in range(0, len(content), piece):
            events.append(_sse(head | {"choices": [{"index": i, "delta": {"content": content[k : k + piece]}, "finish_reason": None}]}))
        events.append(_sse(head | {"choices": [{"index": i, "delta": {}, "finish_reason": choice["finish_reason"]}]}))
    if include_usage:
        events.append(_sse(head | {"choices": [], "usage": completion["usage"]}))
    events.append(_sse("[DONE]"))
    return events


def _bounded(config: GenerationConfig, max_tokens: int, max_n: int) -> GenerationConfig | str:
    """``config`` within the server's per-request bounds, or why it cannot be."""
    if (config.n or 1) > max_n:
        return f"n={config.n} is over this server's limit of {max_n} completions a request (agentworld serve --max-n)"
    if (config.max_tokens or 0) > max_tokens:
        # Lowered, not refused: clients ask for generous limits (32,768 as published) and
        # get what a server with a shorter window gives, an answer cut at its limit.
        return dataclasses.replace(config, max_tokens=max_tokens)
    return config


def _check_settings(fail_rate: float, fault: str, default_domain: str | None) -> None:
    if not 0.0 <= fail_rate < 1.0:
        raise ValueError("fail_rate must be in [0, 1)")
    if fault not in FAULTS:
        raise ValueError(f"fault must be one of {', '.join(FAULTS)}")
    if default_domain is not None and default_domain not in DOMAINS:
        raise ValueError(f"unknown domain {default_domain!r}: one of {', '.join(DOMAINS)}")


def create_app(
    backend: Backend,
    *,
    model_name: str | None = None,
    fail_rate: float = 0.0,
    seed: int = 0,
    split_reasoning: bool = False,
    policy: ServerPolicy | None = None,
    fault: str = "http",
    delay_s: float = 0.0,
    max_tokens_limit: int = 4096,
    max_n: int = 8,
    default_domain: str | None = None,
) -> FastAPI:
    """The server app for ``backend``; ``model_name`` is what ``/v1/models`` lists.

    ``split_reasoning`` moves ``<think>`` blocks out of the content into
    ``reasoning_content``, as reasoning parsers of inference servers do. ``policy`` sets
    the bearer token (what OpenAI clients send as their API key; ``/health`` stays open)
    and the request size limit. ``max_tokens_limit`` and ``max_n`` bound what one request
    may ask the model for (completion tokens, completions), so no client holds the model
    for the others: a request above either is refused with 400. ``default_domain`` is
    the domain of a request that neither carries one nor has an agentworld system prompt.
    """
    _check_settings(fail_rate, fault, default_domain)
    served = model_name or backend.model_id
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await backend.aclose()

    app = FastAPI(title="agentworld world model", version="1", lifespan=lifespan)
    app.add_middleware(RequestGuard, policy=dataclasses.replace(policy or ServerPolicy(), openai_errors=True))
    counters = {"requests": 0, "injected_failures": 0, "errors": 0, "in_flight": 0, "peak_in_flight": 0}
    created = int(time.time())

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "model": served}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": served, "object": "model", "created": created, "owned_by": "agentworld"}]}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        batcher = getattr(backend, "batcher", None)
        extra = {"batches": batcher.batches, "rows": batcher.rows, "peak_batch_rows": batcher.peak_rows} if batcher else {}
        return {**counters, **extra}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        counters["requests"] += 1
        number = counters["requests"]
        try:
            body = ChatRequest.model_validate(await request.json())
        except (ValidationError, ValueError) as exc:
            return _error(400, f"invalid request: {exc}", "invalid_request_error")
        if delay_s:
            await asyncio.sleep(delay_s)
        # Seeded by the request's arrival number: the same run fails the same requests.
        if fail_rate and unit_hash(seed, "fail", number) < fail_rate:
            counters["injected_failures"] += 1
            return _injected_failure(seed, number, fault, served)
        config = _bounded(body.generation_config(), max_tokens_limit, max_n)
        if isinstance(config, str):
            counters["errors"] += 1
            return _error(400, config, "invalid_request_error")
        messages = body.chat_messages()
        domain = body.domain or prompt_domain(messages) or default_domain
        counters["in_flight"] += 1
        counters["peak_in_flight"] = max(counters["peak_in_flight"], counters["in_flight"])
        try:
            completions = await backend.complete(messages, config, domain=domain)
        except BackendError as exc:
            counters["errors"] += 1
            return _error(400, str(exc) + ("" if domain else _NO_DOMAIN), "invalid_request_error")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            counters["errors"] += 1
            return _error(500, f"{type(exc).__name__}: {exc}", "server_error")
        finally:
            counters["in_flight"] -= 1
        result = _chat_completion(completions, served, split_reasoning=split_reasoning)
        return _streamed(result, body) if body.stream else result

    return app


def run_server(app: FastAPI, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
               policy: ServerPolicy | None = None) -> None:
    from agentworld import serving

    serving.run(app, host=host, port=port, policy=policy or ServerPolicy(), log_level=log_level)
