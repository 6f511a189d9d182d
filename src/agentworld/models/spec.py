"""One way to name a backend: the spec string, parsed by :func:`parse_backend_spec`.

Grammar (every command, judge flag and YAML config uses it)::

    [LABEL=]BACKEND[:TARGET][@URL][,KEY=VALUE...]

- ``BACKEND``: ``openai``, ``hf``, ``smol``, ``llamacpp`` or ``retrieval``.
- ``TARGET``: the backend's main argument: the model name (``openai``), the checkpoint
  folder (``hf``), the adapter folder (``smol``), the GGUF file (``llamacpp``), the trajectories to index (``retrieval``).
- ``@URL``: the endpoint (``openai`` only).
- ``,KEY=VALUE``: backend options; ``--opt KEY=VALUE`` (repeatable) adds more, or replaces
  a part of the spec (``--opt model=other``), and takes values verbatim, so a value holding
  a comma goes there.
- ``LABEL=``: a display name; only judges (``-j NAME=openai:MODEL@URL``) take one.
- Options every backend takes (:data:`RUNNER_OPTIONS`), applied by the runner around the
  backend rather than by it: ``demos=K`` puts the K nearest train-split turns of the
  sample's domain into the simulation context, from ``demo_source=PATH`` (default: the
  local benchmark's trajectories, train split only); see :mod:`agentworld.models.demos`.

Examples: ``smol``, ``smol,demos=2``, ``hf:ckpt/,precision=bf16``, ``retrieval:trajs.jsonl,domain=terminal``,
``openai:qwen3:8b@http://localhost:8000/v1,max_retries=2``.

This module imports nothing heavy: parsing a spec never loads torch or transformers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict


class BackendSpecError(ValueError):
    """A spec or option the user wrote wrongly; the message says what and how to fix it."""


@dataclass(frozen=True)
class BackendKind:
    """What a backend accepts, known without importing it."""

    name: str
    target: str | None
    """The option ``BACKEND:TARGET`` fills."""
    summary: str
    options: dict[str, type] = field(default_factory=dict)
    """Every constructor option and the type a string value is read as (``dict``: JSON)."""
    required: tuple[str, ...] = ()
    impl: str = ""
    """``module:Class``, imported only when the backend is built."""

    @property
    def takes_url(self) -> bool:
        return "base_url" in self.options

    @property
    def all_options(self) -> dict[str, type]:
        """The constructor's options plus those the runner applies (:data:`RUNNER_OPTIONS`)."""
        return {**self.options, **RUNNER_OPTIONS}


RUNNER_OPTIONS: dict[str, type] = {"demos": int, "demo_source": str}
"""Options of every backend that the runner handles, never passed to a constructor."""

KINDS: dict[str, BackendKind] = {
    k.name: k
    for k in (
        BackendKind(
            "openai", "model", "any OpenAI-compatible endpoint: openai:MODEL@URL",
            {"model": str, "base_url": str, "api_key": str, "timeout": float, "max_retries": int, "backoff_s": float,
             "backoff_max_s": float, "revision": str, "extra_body": dict, "jitter_seed": int, "send_domain": bool},
            impl="agentworld.models.openai_api:OpenAIBackend",
        ),
        BackendKind(
            "hf", "path", "a local Hugging Face checkpoint folder: hf:PATH",
            {"path": str, "adapter": str, "device": str, "precision": str, "max_batch": int, "model_name": str,
             "revision": str, "chat_template": str, "max_context": int},
            required=("path",), impl="agentworld.models.hf:HFBackend",
        ),
        BackendKind(
            "smol", "adapter",
            "the embedded SmolLM2 world model (offline); smol:ADAPTER swaps the adapter, engine=llamacpp|hf|auto",
            {"adapter": str, "packaged": bool, "engine": str, "threads": int, "context": int, "precision": str,
             "max_batch": int, "device": str, "cache_dir": str, "gguf": str, "model_name": str, "chat_template": str,
             "max_context": int, "prefix_cache": bool, "draft": int},
            impl="agentworld.models.smol:SmolBackend",
        ),
        BackendKind(
            "llamacpp", "path", "a GGUF model file run by llama.cpp on the CPU: llamacpp:FILE.gguf",
            {"path": str, "max_batch": int, "context": int, "threads": int, "tokenizer": str, "model_name": str,
             "revision": str, "max_context": int, "prefix_cache": bool, "draft": int},
            required=("path",), impl="agentworld.models.llamacpp:LlamaCppBackend",
        ),
        BackendKind(
            "retrieval", "source", "BM25 over past turns, the baseline: retrieval:TRAJECTORIES",
            {"source": str, "domain": str, "context_turns": int, "context_weight": float, "adapt": bool},
            required=("source",), impl="agentworld.models.retrieval:RetrievalBackend",
        ),
    )
}

GRAMMAR = "[LABEL=]BACKEND[:TARGET][@URL][,KEY=VALUE...]"
SPEC_HELP = (
    f"Backend spec {GRAMMAR}: smol | hf:PATH | retrieval:TRAJECTORIES | openai:MODEL@URL, "
    "options after commas (e.g. hf:ckpt/,precision=bf16)."
)
OPT_HELP = "Backend option KEY=VALUE, value taken verbatim (repeatable), e.g. --opt api_key=sk-x."

_SPEC = re.compile(
    r"(?:(?P<label>[\w.-]+)=)?(?P<name>[A-Za-z][\w-]*)(?::(?P<target>[^@,]*))?(?:@(?P<url>[^,]*))?(?:,(?P<opts>.*))?",
    re.S,
)


def backend_names() -> str:
    return ", ".join(KINDS)


class BackendSpec(BaseModel):
    """A parsed backend spec: which backend, its main argument, endpoint and options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    target: str | None = None
    """The model name (openai), checkpoint folder (hf), adapter folder (smol) or source (retrieval)."""
    base_url: str | None = None
    options: dict[str, Any] = {}
    label: str | None = None

    @property
    def kind(self) -> BackendKind:
        return KINDS[self.name]

    def kwargs(self) -> dict[str, Any]:
        """Every option given, the target and URL included (runner options too)."""
        out = dict(self.options)
        if self.target is not None and self.kind.target:
            out[self.kind.target] = self.target
        if self.base_url is not None:
            out["base_url"] = self.base_url
        return out

    def backend_kwargs(self) -> dict[str, Any]:
        """The backend constructor's keyword arguments: :meth:`kwargs` less the runner's."""
        return {k: v for k, v in self.kwargs().items() if k not in RUNNER_OPTIONS}

    def runner_options(self) -> dict[str, Any]:
        """The options the runner applies (``demos``, ``demo_source``) that this spec sets."""
        return {k: v for k, v in self.options.items() if k in RUNNER_OPTIONS}

    def with_options(self, **options: Any) -> BackendSpec:
        """This spec plus ``options`` (already typed); the same checks as parsing."""
        return parse_backend_spec(self, options, allow_label=True)

    def __str__(self) -> str:
        text = (f"{self.label}=" if self.label else "") + self.name
        if self.target is not None:
            text += f":{self.target}"
        if self.base_url is not None:
            text += f"@{self.base_url}"
        return text + "".join(f",{k}={_show(v)}" for k, v in self.options.items())


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (dict, bool)) else str(value)


def parse_option(pair: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (key, value); dashes in the key read as underscores."""
    key, sep, value = pair.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise BackendSpecError(f"bad option {pair!r}: write KEY=VALUE, e.g. --opt max_retries=2")
    return key, value


def parse_backend_spec(
    text: str | BackendSpec, options: Iterable[str] | Mapping[str, Any] | None = None, *, allow_label: bool = False,
    complete: bool = True,
) -> BackendSpec:
    """Parse ``text`` (see the module doc) plus ``options``: ``KEY=VALUE`` strings (``--opt``)
    or a mapping of typed values (Python, YAML). Raises :class:`BackendSpecError` naming
    what is wrong and the valid choices. ``complete=False`` skips the check that required
    options (hf's path, retrieval's source) are there, for a spec whose options come later."""
    if isinstance(text, BackendSpec):
        spec = text
    else:
        spec = _parse_text(str(text).strip())
    if spec.label and not allow_label:
        raise BackendSpecError(f"{str(text)!r}: a LABEL= prefix only names judges (-j NAME=openai:MODEL@URL)")
    if options is not None:
        extra = dict(options) if isinstance(options, Mapping) else dict(parse_option(p) for p in options)
        spec = _build(spec.name, spec.label, spec.kwargs(), extra, where=str(text))
    if complete and (missing := [r for r in spec.kind.required if r not in spec.kwargs()]):
        raise BackendSpecError(
            f"{str(text)!r}: the {spec.name} backend needs {missing[0]}: write {spec.kind.summary.split(': ')[-1]}"
        )
    return spec


def _parse_text(text: str) -> BackendSpec:
    m = _SPEC.fullmatch(text)
    if not m:
        raise BackendSpecError(
            f"bad backend spec {text!r}: write {GRAMMAR}, e.g. openai:qwen3@http://localhost:8000/v1 "
            f"(backends: {backend_names()})"
        )
    name, target, url = m["name"], m["target"], m["url"]
    kind = _kind(name, text)
    given: dict[str, Any] = {}
    if target is not None:
        if "=" in target:
            raise BackendSpecError(
                f"{text!r}: options follow a comma ({name}:TARGET,KEY=VALUE), or pass them with --opt KEY=VALUE"
            )
        if not kind.target:
            raise BackendSpecError(f"{text!r}: the {name} backend takes no :TARGET")
        if not target:
            raise BackendSpecError(f"{text!r}: empty {kind.target} after '{name}:'")
        given[kind.target] = target
    if url is not None:
        if not kind.takes_url:
            raise BackendSpecError(f"{text!r}: only the openai backend takes an @URL")
        if not url:
            raise BackendSpecError(f"{text!r}: empty URL after '@'")
        given["base_url"] = url
    opts = dict(parse_option(p) for p in m["opts"].split(",")) if m["opts"] is not None else {}
    return _build(name, m["label"], given, opts, where=text, strict=True)


def _kind(name: str, where: str) -> BackendKind:
    if name not in KINDS:
        raise BackendSpecError(f"unknown backend {name!r} in {where!r}: choose one of {backend_names()}")
    return KINDS[name]


def _build(name: str, label: str | None, given: dict[str, Any], extra: dict[str, Any], *, where: str,
           strict: bool = False) -> BackendSpec:
    """Merge ``extra`` options into ``given`` (typed values), check names and types. Within
    one spec string a repeated option is an error (``strict``); options from a later layer
    (``--opt``, a config's options mapping, a command-line override) win."""
    kind = _kind(name, where)
    values = dict(given)
    for key, value in extra.items():
        if key not in kind.all_options:
            raise BackendSpecError(
                f"{where!r}: the {name} backend has no option {key!r}; its options: {', '.join(kind.all_options)}"
            )
        if strict and key in values:
            raise BackendSpecError(f"{where!r}: {key} is given twice ({values[key]!r} and {value!r})")
        values[key] = _coerce(kind, key, value)
    target = values.pop(kind.target, None) if kind.target else None
    base_url = values.pop("base_url", None)
    return BackendSpec(name=name, target=None if target is None else str(target),
                       base_url=base_url, options=values, label=label)


def _coerce(kind: BackendKind, key: str, value: Any) -> Any:
    """A string from the command line or a spec, read as the option's type; other values
    (Python, YAML) pass as they are."""
    if not isinstance(value, str):
        return value
    want = kind.all_options[key]
    try:
        if want is bool:
            low = value.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        if want is dict:
            parsed = json.loads(value)
            if not isinstance(parsed, dict):
                raise ValueError
            return parsed
        if want in (int, float):
            return want(value)
    except ValueError:
        kind_name = {bool: "true or false", dict: "a JSON object", int: "an integer"}.get(want, "a number")
        raise BackendSpecError(f"option {key}={value!r} of the {kind.name} backend must be {kind_name}") from None
    return value


def check_spec_text(text: str) -> str:
    """A config field validator: the spec's grammar and names (reported at its own line)."""
    parse_backend_spec(text, complete=False)  # a BackendSpecError is a ValueError: pydantic reports it
    return text


def check_spec_options(config: Any, *pairs: tuple[str, str]) -> Any:
    """A config validator: each (spec key, options key) pair makes one spec with known
    option names and readable values. Required parts (hf's path, retrieval's source) are
    checked when the backend is built: a caller may hand in its own world model instead."""
    for spec_key, options_key in pairs:
        try:
            parse_backend_spec(getattr(config, spec_key), getattr(config, options_key), complete=False)
        except BackendSpecError as exc:
            raise ValueError(f"{spec_key} / {options_key}: {exc}") from None
    return config
