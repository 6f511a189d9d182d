"""What every agentworld server does the same way: bearer tokens, request size limits, uvicorn.

``agentworld serve`` (OpenAI-compatible), ``agentworld sim serve`` (HTTP/WebSocket) and
``agentworld sim mcp --transport http`` all sit behind :class:`RequestGuard`, an ASGI
middleware that

- refuses a request without the configured bearer token with 401 (HTTP) or a refused
  handshake (WebSocket), comparing in constant time; paths in ``open_paths`` (``/health``,
  for liveness probes and readiness polling) stay open;
- refuses a body larger than ``max_body_bytes`` with 413: at once when ``Content-Length``
  says so, otherwise as soon as the streamed bytes pass the limit, so an oversized body
  is never held in memory whole.

WebSocket messages are capped by uvicorn (``ws_max_size``, see :func:`uvicorn_config`);
the simulator answers messages over its own limit with an error frame.
"""

from __future__ import annotations

import hmac
import json
import os
import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

TOKEN_ENV = "AGENTWORLD_TOKEN"
DEFAULT_MAX_REQUEST_BYTES = 1 << 20
#: WebSocket messages between the request limit and this multiple of it get an error frame
#: (the connection stays usable); larger ones are cut off by the protocol layer (close 1009)
#: before they are read whole.
WS_HARD_FACTOR = 4
#: an oversized HTTP body is read on and dropped up to this multiple of the limit, so the
#: client gets to read its 413; past it the connection is simply closed
DRAIN_FACTOR = 32

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class ServerPolicy:
    """Access and size rules shared by the servers (one value per server process)."""

    token: str | None = None
    """Bearer token every request must carry; None leaves the server open."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    """Largest request body (HTTP) or message (WebSocket) accepted."""
    open_paths: frozenset[str] = field(default_factory=lambda: frozenset({"/health"}))
    """Paths answered without a token (liveness probes)."""
    openai_errors: bool = False
    """Refusals in the OpenAI wire shape (``{"error": {"message", "type", "code"}}``), which
    OpenAI clients show; otherwise the simulator's (``{"error": code, "message", "hint"}``)."""

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1:
            raise ValueError("max_request_bytes must be positive")
        if self.token is not None and not self.token.strip():
            raise ValueError("the token is empty")

    @property
    def ws_max_size(self) -> int:
        return self.max_request_bytes * WS_HARD_FACTOR


def resolve_token(option: str | None) -> str | None:
    """The ``--token`` option, else ``$AGENTWORLD_TOKEN``, else None (no authentication)."""
    token = option if option is not None else os.environ.get(TOKEN_ENV)
    return token or None


def bearer_ok(headers: Iterable[tuple[bytes, bytes]], token: str) -> bool:
    """Whether the ``Authorization: Bearer`` header carries ``token`` (constant-time compare)."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, given = value.partition(b" ")
            return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token.encode())
    return False


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        (b"connection", b"close"), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})


def error_body(status: int, code: str, message: str, hint: str | None = None, *, openai: bool = False) -> dict[str, Any]:
    """A refusal body, in the simulator's shape or the OpenAI one."""
    if openai:
        return {"error": {"message": f"{message} ({hint})" if hint else message, "type": code, "code": status}}
    return {"error": code, "message": message, **({"hint": hint} if hint else {})}


class _TooLarge(Exception):
    pass


class RequestGuard:
    """ASGI middleware enforcing a :class:`ServerPolicy` (see the module docstring)."""

    def __init__(self, app: Any, policy: ServerPolicy):
        self.app, self.policy = app, policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        token = self.policy.token
        if token is not None and scope.get("path") not in self.policy.open_paths and not bearer_ok(scope.get("headers", []), token):
            return await self._unauthorized(scope, receive, send)
        if kind == "websocket":
            return await self.app(scope, receive, send)
        limit = self.policy.max_request_bytes
        headers = {name.lower(): value for name, value in scope.get("headers", [])}
        length = headers.get(b"content-length", b"").strip()
        if length.isdigit() and int(length) > limit:
            # A client waiting for "100 Continue" never sends the body: nothing to drain.
            waiting = headers.get(b"expect", b"").lower() == b"100-continue"
            return await self._too_large(receive, send, int(length), more=not waiting)
        await self._bounded(scope, receive, send, limit)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        seen = 0
        started = refused = False

        async def counted() -> dict[str, Any]:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    # Answer now: the app may turn a failed body read into its own error.
                    if not refused:
                        refused = True
                        if not started:  # else the app's answer is cut off where it stands
                            await self._too_large(receive, send, seen, more=message.get("more_body", False))
                    raise _TooLarge
            return message

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            if refused:
                return  # the 413 is out: whatever the app still says is dropped
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except Exception:
            if not refused:
                raise

    async def _too_large(self, receive: Receive, send: Send, size: int, *, more: bool) -> None:
        """Answer 413. The rest of the body is read and dropped (up to a bound), never kept:
        most clients read the answer only once they have sent the whole request, and a
        connection closed under them loses the answer."""
        limit = self.policy.max_request_bytes
        data = json.dumps(error_body(
            413, "too_large", f"request body of {size}+ bytes is over the limit of {limit} bytes",
            "send a smaller request, or start the server with a larger --max-request-bytes",
            openai=self.policy.openai_errors)).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": data, "more_body": True})
        drained = 0
        while more and drained < DRAIN_FACTOR * limit:
            message = await receive()
            if message["type"] != "http.request":
                break
            drained += len(message.get("body", b""))
            more = message.get("more_body", False)
        await send({"type": "http.response.body", "body": b""})

    async def _unauthorized(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = error_body(401, "unauthorized", "missing or wrong bearer token",
                          f"send 'Authorization: Bearer <token>' (the server's --token or ${TOKEN_ENV})",
                          openai=self.policy.openai_errors)
        if scope["type"] == "http":
            await _send_json(send, 401, body, [(b"www-authenticate", b'Bearer realm="agentworld"')])
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            data = json.dumps(body).encode()
            await send({"type": "websocket.http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
            await send({"type": "websocket.http.response.body", "body": data})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})


def guarded(app: Any, policy: ServerPolicy) -> Any:
    """``app`` behind a :class:`RequestGuard` (for apps not built here, e.g. the MCP SDK's)."""
    return RequestGuard(app, policy)


def uvicorn_config(app: Any, *, host: str, port: int, policy: ServerPolicy, log_level: str = "warning", **kw: Any) -> Any:
    """The uvicorn configuration every agentworld server runs with: the WebSocket message
    cap and a bounded graceful shutdown (open sessions are saved, hung ones not waited for)."""
    import uvicorn

    kw.setdefault("ws", "websockets-sansio")
    kw.setdefault("timeout_graceful_shutdown", 5)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=policy.ws_max_size, **kw)


def run(app: Any, *, host: str, port: int, policy: ServerPolicy, on_exit: Callable[[], None] | None = None, **kw: Any) -> None:
    """Serve ``app`` until SIGINT or SIGTERM; ``on_exit`` runs after a graceful shutdown
    either way (uvicorn re-raises the signal it caught once it has stopped; the default
    SIGTERM action would end the process before any cleanup, so it becomes SystemExit)."""
    import uvicorn

    previous = signal.signal(signal.SIGTERM, lambda sig, _frame: sys.exit(128 + sig))
    try:
        uvicorn.Server(uvicorn_config(app, host=host, port=port, policy=policy, **kw)).run()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            if on_exit is not None:
                on_exit()
        finally:
            signal.signal(signal.SIGTERM, previous)
