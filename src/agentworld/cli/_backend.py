"""What every command that runs or serves a world model shares: ``--backend SPEC`` and
``--opt KEY=VALUE``, the response cache (``--cache``/``--cache-mode``) and a server's
token and request limit.

The grammar and its parser live in :mod:`agentworld.models.spec`; this module only turns
its errors into clean CLI errors and shows a status line while a backend loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from agentworld.cli._common import console, fail
from agentworld.models.spec import OPT_HELP, SPEC_HELP, BackendSpec, BackendSpecError, parse_backend_spec

# escape: help text is rich markup, where "[@URL]" would read as a tag and vanish.
BackendOpt = Annotated[str, typer.Option("--backend", "-b", metavar="SPEC", help=escape(SPEC_HELP))]
OptsOpt = Annotated[list[str] | None, typer.Option("--opt", metavar="KEY=VALUE", help=OPT_HELP)]


def backend_spec(text: str, opts: list[str] | None = None, *, allow_label: bool = False, flag: str = "--backend",
                 **defaults: Any) -> BackendSpec:
    """Parse ``text`` plus ``--opt`` pairs; ``defaults`` fill options the user left unset
    (e.g. the retrieval index's domain from the command's own ``--domain``)."""
    try:
        return with_defaults(parse_backend_spec(text, opts, allow_label=allow_label), **defaults)
    except BackendSpecError as exc:
        raise fail(str(exc), f"see {flag} in --help for the spec grammar") from None


def with_defaults(spec: BackendSpec, **defaults: Any) -> BackendSpec:
    """``spec`` plus the ``defaults`` it takes and leaves unset (None: no default)."""
    unset = {k: v for k, v in defaults.items() if v is not None and k in spec.kind.options and k not in spec.kwargs()}
    return spec.with_options(**unset) if unset else spec


def open_backend(spec: BackendSpec, executor: Any = None) -> Any:
    """Build the backend, turning setup problems (missing files, optional dependencies,
    bad option values) into clean errors. With a Ray ``executor``, a local model backend
    (hf, smol) runs in Ray actors; other backends are built here as always."""
    from agentworld.models import load_backend

    try:
        if executor is not None and executor.is_ray:
            from agentworld.executors.actors import ACTOR_BACKENDS, ActorBackend

            if spec.name in ACTOR_BACKENDS:
                with console.status(f"starting {spec.name} model actors on the Ray cluster..."):
                    return ActorBackend.start(spec, executor)
            console.print(f"[yellow]note:[/] --executor ray changes nothing for the {spec.name} backend: it runs here")
        with console.status(f"loading the {spec.name} backend..."):
            return load_backend(spec)
    except (FileNotFoundError, ValueError, ImportError, RuntimeError, TypeError) as exc:
        raise fail(f"cannot load backend {str(spec)!r}: {exc}", "check the backend spec and its options (--help)") from None


def load_cli_backend(text: str, opts: list[str] | None = None, **defaults: Any) -> Any:
    """``--backend``/``--opt`` straight to a built backend (for commands with nothing to
    check before it)."""
    return open_backend(backend_spec(text, opts, **defaults))


def open_cache(path: Path | None, mode: str):
    """The response cache for ``--cache``/``--cache-mode``, or None."""
    from agentworld.models import CacheMode, ResponseCache

    if mode not in CacheMode.__members__:
        raise fail(f"bad --cache-mode {mode!r}", "use off, rw or replay")
    if path is None:
        if mode == "replay":
            raise fail("--cache-mode replay needs --cache FILE", "point --cache at the cache a previous run filled")
        return None
    if mode == "off":
        return None
    try:
        return ResponseCache(path, mode)
    except FileNotFoundError as exc:
        raise fail(str(exc), "run once with --cache-mode rw to fill it") from None


def server_policy(token: str | None, max_request_bytes: int, *, host: str, allow_hosts: list[str] | None = None,
                  allow_origins: list[str] | None = None) -> Any:
    """The policy of a server bound to ``host``: the Host names and Origins it admits
    (``--allow-host``, ``--allow-origin``), the bearer token (``--token`` or
    ``$AGENTWORLD_TOKEN``) and the request size limit. A bind beyond loopback without a
    token is refused here, before anything is loaded."""
    from agentworld.serving import PolicyError, ServerPolicy, resolve_token

    try:
        return ServerPolicy.for_bind(host, allow_hosts=allow_hosts or (), allow_origins=allow_origins or (),
                                     token=resolve_token(token), max_request_bytes=max_request_bytes)
    except PolicyError as exc:
        raise fail(str(exc), exc.hint) from None
    except ValueError as exc:
        raise fail(str(exc), "--max-request-bytes takes a positive byte count; --token a non-empty string") from None
