"""What every agentworld server does the same way: Host and Origin checks, bearer tokens,
request size limits, uvicorn.

``agentworld serve`` (OpenAI-compatible), ``agentworld sim serve`` and ``agentworld env
serve`` (HTTP/WebSocket) and ``agentworld sim mcp --transport http`` all sit behind
:class:`RequestGuard`, an ASGI middleware that, in this order,

- refuses with 403 (HTTP) or a refused handshake (WebSocket) a request whose ``Host``
  header is missing or names a host the server is not reached at
  (:attr:`ServerPolicy.allowed_hosts`): a hostile name resolving to 127.0.0.1 (DNS
  rebinding) gets nothing, not even ``/health``;
- refuses the same way a request whose ``Origin`` header is present and is neither the
  server's own origin (the scheme and ``Host`` the request came with) nor listed in
  :attr:`ServerPolicy.allowed_origins`: a web page of another origin cannot drive the
  server over WebSocket or "simple" cross-origin POSTs. Requests without ``Origin``
  (curl, Python clients, other servers) pass this check;
- refuses a request without the configured bearer token with 401 (HTTP) or a refused
  handshake (WebSocket), comparing in constant time; paths in ``open_paths`` (``/health``,
  for liveness probes and readiness polling) stay open;
- refuses a body larger than ``max_body_bytes`` with 413: at once when ``Content-Length``
  says so, otherwise as soon as the streamed bytes pass the limit, so an oversized body
  is never held in memory whole.

WebSocket messages are capped by uvicorn (``ws_max_size``, see :func:`uvicorn_config`);
the simulator answers messages over its own limit with an error frame.

:meth:`ServerPolicy.for_bind` builds the policy of a server bound to an address, and refuses
a bind beyond loopback without a token; :func:`uvicorn_config` refuses it too.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

TOKEN_ENV = "AGENTWORLD_TOKEN"
DEFAULT_MAX_REQUEST_BYTES = 1 << 20
#: WebSocket messages between the request limit and this multiple of it get an error frame
#: (the connection stays usable); larger ones are cut off by the protocol layer (close 1009)
#: before they are read whole.
WS_HARD_FACTOR = 4
#: an oversized HTTP body is read on and dropped up to this multiple of the limit, so the
#: client gets to read its 413; past it the connection is simply closed
DRAIN_FACTOR = 32

#: The names a loopback server is reached at (the ``Host`` header, port aside).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Bind addresses meaning every interface of the machine.
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
_DEFAULT_PORTS = {"http": 80, "https": 443}

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class PolicyError(ValueError):
    """A server configuration that is refused (a public bind without a token, a bad
    ``--allow-host`` or ``--allow-origin``), with what to do instead."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (a ``Host`` header, ``[::1]:8000``) as the lower-case name (IP
    addresses in their canonical form, IPv6 without brackets) and the port, or None when
    malformed."""
    value = value.strip().lower()
    port: str | None = None
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    elif value.count(":") > 1:  # a bare IPv6 address (an --allow-host value)
        name = value
    else:
        name, sep, port_text = value.partition(":")
        port = port_text if sep else None
    if not name or (port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
        return None
    try:
        name = str(ipaddress.ip_address(name))
    except ValueError:
        if not all(c.isalnum() or c in "-._" for c in name):
            return None
    return name, int(port) if port is not None else None


def normalize_origin(value: str) -> str | None:
    """An origin as ``scheme://host[:port]`` (lower case, default port left out), or None
    when ``value`` is not an http(s) origin (``null``, a path, credentials...)."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    hostport = split_host(parts.netloc)
    if hostport is None:
        return None
    name, port = hostport
    shown = f"[{name}]" if ":" in name else name
    return f"{scheme}://{shown}" + (f":{port}" if port is not None and port != _DEFAULT_PORTS[scheme] else "")


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)
def is_local_address(name: str) -> bool:
    """Whether ``name`` is an IP address of one of this machine's interfaces (a socket
    can be bound to it). Host names are not: they need ``--allow-host``."""
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    if ip.is_unspecified or ip.is_multicast:
        return False
    try:
        with socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((name, 0))
    except OSError:
        return False
    return True


def _host_names(values: Iterable[str]) -> frozenset[str]:
    names = set()
    for value in values:
        parsed = split_host(value) if value.strip() != "*" else None
        if parsed is None:
            raise PolicyError(f"not a host name: {value!r}", "give --allow-host a name or address the "
                              "server is reached at, e.g. agentworld.example.org (no wildcards)")
        names.add(parsed[0])
    return frozenset(names)


def _origins(values: Iterable[str]) -> frozenset[str]:
    origins = set()
    for value in values:
        origin = normalize_origin(value)
        if origin is None:
            hint = ("'*' is not supported: it would let every web page drive the server; list each trusted origin"
                    if value.strip() == "*" else "give --allow-origin a scheme://host[:port] origin, e.g. http://ui.local:8080")
            raise PolicyError(f"not an http(s) origin: {value!r}", hint)
        origins.add(origin)
    return frozenset(origins)


@dataclass(frozen=True)
class ServerPolicy:
    """Access and size rules shared by the servers (one value per server process).

    The default admits loopback names only (``localhost``, ``127.0.0.1``, ``[::1]``) and no
    foreign origin; :meth:`for_bind` is the policy of a server bound to a given address.
    """

    token: str | None = None
    """Bearer token every request must carry; None leaves the server open."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    """Largest request body (HTTP) or message (WebSocket) accepted."""
    open_paths: frozenset[str] = field(default_factory=lambda: frozenset({"/health"}))
    """Paths answered without a token (liveness probes)."""
    openai_errors: bool = False
    """Refusals in the OpenAI wire shape (``{"error": {"message", "type", "code"}}``), which
    OpenAI clients show; otherwise the simulator's (``{"error": code, "message", "hint"}``)."""
    allowed_hosts: frozenset[str] = LOOPBACK_NAMES
    """Names the ``Host`` header may carry, port aside (``[::1]`` is ``::1``): the names the
    server is bound to and reached at. Any other gets 403 (DNS rebinding)."""
    local_addresses: bool = False
    """Also admit every IP address of this machine as ``Host`` (a 0.0.0.0 or :: bind)."""
    allowed_origins: frozenset[str] = frozenset()
    """Origins (``scheme://host[:port]``) whose browser pages may call the server, besides
    its own; a request with any other ``Origin`` gets 403. No wildcard."""

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1:
            raise ValueError("max_request_bytes must be positive")
        if self.token is not None and not self.token.strip():
            raise ValueError("the token is empty")
        # Normalized once, so lists, sets and written forms ([::1], HTTP://X:80) all work.
        object.__setattr__(self, "allowed_hosts", _host_names(self.allowed_hosts))
        object.__setattr__(self, "allowed_origins", _origins(self.allowed_origins))

    @classmethod
    def for_bind(cls, host: str, *, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = (),
                 **kw: Any) -> ServerPolicy:
        """The policy of a server bound to ``host``: a loopback bind admits the loopback
        names, a specific address that address, a wildcard bind (0.0.0.0, ::) the loopback
        names and every address of this machine; ``allow_hosts`` adds names (behind a
        proxy), ``allow_origins`` trusted browser origins. Raises :class:`PolicyError` for
        a bind beyond loopback without a token."""
        policy = cls(allowed_hosts=frozenset(_bound_names(host)) | _host_names(allow_hosts),
                     local_addresses=host.strip() in WILDCARD_BINDS, allowed_origins=_origins(allow_origins), **kw)
        check_bind(host, policy)
        return policy

    def refusal(self, scope: Scope) -> dict[str, Any] | None:
        """Why a request is refused before its token is even looked at (a 403 body: a Host
        the server is not reached at, a foreign Origin), or None."""
        host = origin = None
        for name, value in scope.get("headers", []):
            name = name.lower()
            if name == b"host" and host is None:
                host = value.decode("latin-1")
            elif name == b"origin" and origin is None:
                origin = value.decode("latin-1")
        openai = self.openai_errors
        if host is None:
            return error_body(403, "forbidden_host", "request without a Host header",
                              "send the Host header (HTTP/1.1 requires it)", openai=openai)
        parsed = split_host(host)
        if parsed is None or not self.host_ok(parsed[0]):
            return error_body(403, "forbidden_host", f"Host {host[:200]!r} is not a name this server is reached at",
                              "reach it at the address it is bound to, or start it with --allow-host NAME "
                              "for a name it is served under (e.g. behind a proxy)", openai=openai)
        if origin is not None:
            scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
            given = normalize_origin(origin)
            if given is None or (given != normalize_origin(f"{scheme}://{host}") and given not in self.allowed_origins):
                return error_body(403, "forbidden_origin", f"cross-origin request from {origin[:200]!r} refused",
                                  "web pages of other origins may not call this server; if you trust that page, "
                                  "start the server with --allow-origin ORIGIN", openai=openai)
        return None

    def host_ok(self, name: str) -> bool:
        """Whether a ``Host`` name (lower case, no port) is one the server is reached at."""
        return name in self.allowed_hosts or (self.local_addresses and is_local_address(name))

    @property
    def ws_max_size(self) -> int:
        return self.max_request_bytes * WS_HARD_FACTOR


def _bound_names(host: str) -> set[str]:
    host = host.strip()
    if is_loopback(host):
        parsed = split_host(host)
        return set(LOOPBACK_NAMES) | ({parsed[0]} if parsed else set())
    if host in WILDCARD_BINDS:
        return set(LOOPBACK_NAMES)
    parsed = split_host(host)
    if parsed is None:
        raise PolicyError(f"not a bind address: {host!r}", "pass --host an address or name of this machine, e.g. 127.0.0.1")
    return {parsed[0]}


def check_bind(host: str, policy: ServerPolicy) -> None:
    """Refuse (:class:`PolicyError`) serving ``host`` beyond loopback without a token."""
    if policy.token is None and not is_loopback(host):
        where = "every interface" if host.strip() in WILDCARD_BINDS else host
        raise PolicyError(f"refusing to serve on {where} without a token: anyone who can reach it could use it",
                          f"pass --token SECRET or set ${TOKEN_ENV} (clients send 'Authorization: Bearer SECRET'), "
                          "or bind 127.0.0.1")


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
        # Host and Origin first, on every path (/health too): a rebinding page reads nothing.
        if (forbidden := self.policy.refusal(scope)) is not None:
            return await _refuse(scope, receive, send, 403, forbidden)
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
        await _refuse(scope, receive, send, 401, body, [(b"www-authenticate", b'Bearer realm="agentworld"')])


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, body: dict[str, Any],
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer ``status`` with ``body``: an HTTP response, or a refused WebSocket handshake
    (an HTTP answer where the server supports it, else close 1008 before accepting)."""
    if scope["type"] == "http":
        await _send_json(send, status, body, headers)
        return
    await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):
        data = json.dumps(body).encode()
        await send({"type": "websocket.http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "websocket.http.response.body", "body": data})
    else:
        reason = body["error"] if isinstance(body["error"], str) else body["error"]["type"]
        await send({"type": "websocket.close", "code": 1008, "reason": reason})


def guarded(app: Any, policy: ServerPolicy) -> Any:
    """``app`` behind a :class:`RequestGuard` (for apps not built here, e.g. the MCP SDK's)."""
    return RequestGuard(app, policy)


def uvicorn_config(app: Any, *, host: str, port: int, policy: ServerPolicy, log_level: str = "warning", **kw: Any) -> Any:
    """The uvicorn configuration every agentworld server runs with: the WebSocket message
    cap and a bounded graceful shutdown (open sessions are saved, hung ones not waited for).
    A bind beyond loopback without a token raises :class:`PolicyError`."""
    import uvicorn

    check_bind(host, policy)

    kw.setdefault("ws", "websockets-sansio")
    kw.setdefault("timeout_graceful_shutdown", 5)
    kw.setdefault("http", _bounded_h11())
    # Past this many open connections, new requests get 503 at once instead of queueing.
    kw.setdefault("limit_concurrency", MAX_CONNECTIONS)
    kw.setdefault("h11_max_incomplete_event_size", MAX_HEADER_BYTES)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws_max_size=policy.ws_max_size, **kw)


MAX_CONNECTIONS = 512
"""Open connections (HTTP and WebSocket) a server holds at once."""
HEADER_TIMEOUT_S = 10.0
"""A connection that has not sent a whole request head this long after it opened (or
after its last answer) is closed: slow clients cannot hold connections open for ever."""
MAX_HEADER_BYTES = 64 << 10
"""Largest request head (request line and headers)."""


def _bounded_h11() -> type:
    """uvicorn's h11 protocol with a deadline for each request head.

    uvicorn times out idle keep-alive connections only after a first answer, and any byte
    received cancels that timer: a client that opens connections and sends a header line
    now and then would hold them all, before the Host and token checks can see a request.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11Protocol(H11Protocol):
        _head_deadline: Any = None

        def _arm(self) -> None:
            self._disarm()
            self._head_deadline = self.loop.call_later(HEADER_TIMEOUT_S, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_too_slow(self) -> None:
            self._head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:  # a whole request head has arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return BoundedH11Protocol


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
