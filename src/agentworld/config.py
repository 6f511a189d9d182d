"""One base for every config: data builders, trainers, and whatever comes next.

A config is a pydantic model whose fields carry their help text, so Python, the CLI and
YAML share one definition. :class:`Config` adds what every config needs: loading a YAML
file with errors that name the file, the key path and its line; ``KEY=VALUE`` overrides
from the command line (values read as YAML scalars, then coerced to the field's type);
unknown keys rejected with a suggestion; saving the resolved config next to its outputs
and reading it back.

Nothing here imports torch, transformers or TRL: the trainers' configs build their
argument fields from those libraries only when they are first used.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

KeyPath = tuple[str | int, ...]


class ConfigError(ValueError):
    """A config that does not load; the message names the source, the key path and the line."""


def opt(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - the word TRL uses in field metadata
    """A config field with help text; list and dict defaults are copied per instance."""
    if isinstance(default, (list, dict)):
        return Field(default_factory=lambda d=default: type(d)(d), description=help, **kw)
    return Field(default=default, description=help, **kw)


class Config(BaseModel):
    """Base of every config: unknown keys are errors, numbers read as text where text is wanted."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, protected_namespaces=())

    renamed: ClassVar[dict[str, str]] = {}
    """Old key -> current key, read as the current one (old config files keep loading)."""

    @classmethod
    def rename_keys(cls, data: Mapping[str, Any], source: str | None = None) -> dict[str, Any]:
        """``data`` with old key names replaced by the current ones."""
        out = dict(data)
        for old, new in cls.renamed.items():
            if old in out:
                if new in out:
                    where = f"{source}: " if source else ""
                    raise ConfigError(f"{where}{old} and {new} both set: {old} is the old name of {new}, keep one")
                out[new] = out.pop(old)
        return out

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Every key with its help text."""
        return {name: f.description or "" for name, f in cls.model_fields.items()}

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], source: str = "<config>", *, lines: Mapping[KeyPath, int] | None = None,
        overridden: Iterable[KeyPath] = (),
    ) -> Self:
        """``cls`` from a mapping; any problem raises :class:`ConfigError` naming ``source``."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(_describe(cls, exc, source, lines or {}, set(overridden))) from None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: Mapping[str, Any] | None = None) -> Self:
        """Read a YAML (or JSON) file into ``cls``; ``overrides`` (nested, e.g. from
        :func:`parse_overrides`) win over the file."""
        path = Path(path)
        data, lines = read_yaml(path)
        for old, new in cls.renamed.items():  # errors about a renamed key point at its line
            if (old,) in lines:
                lines[(new,)] = lines[(old,)]
        data = cls.rename_keys(data, str(path))
        merged, overridden = merge_overrides(data, cls.rename_keys(overrides or {}, "command line"))
        return cls.from_mapping(merged, str(path), lines=lines, overridden=overridden)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any] | None = None) -> Self:
        """``cls`` from its defaults and command-line overrides only."""
        merged, overridden = merge_overrides({}, cls.rename_keys(overrides or {}, "command line"))
        return cls.from_mapping(merged, "command line", overridden=overridden)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (text, numbers, lists, mappings), as saved."""
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> Path:
        """Write the resolved config as YAML; :meth:`from_yaml` reads it back."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False), encoding="utf-8")
        return path


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """The mapping in ``path`` and the line (1-based) of every key in it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values, got {type(data).__name__}")
    lines: dict[KeyPath, int] = {}
    _key_lines(node, (), lines)
    return data, lines


def _key_lines(node: yaml.Node | None, prefix: KeyPath, lines: dict[KeyPath, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            lines[path] = key.start_mark.line + 1
            _key_lines(value, path, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*prefix, i)] = item.start_mark.line + 1
            _key_lines(item, (*prefix, i), lines)


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[x, y]"]`` as ``{"a": {"b": 1}, "c": ["x", "y"]}``.

    Values are read as YAML (``true``, ``3``, ``1e-5``, ``[a, b]``, ``{k: v}``), so the
    config's field types coerce them like values written in a file."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().removeprefix("--")
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"command line: {item!r}: expected KEY=VALUE (KEY may be dotted: a.b=c)")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw  # not YAML: keep the text, the field's type decides
        node = out
        *parents, last = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"command line: {key}: {part} is set to a value and used as a section")
            node = child
        node[last] = value
    return out


def merge_overrides(data: Mapping[str, Any], overrides: Mapping[str, Any]) -> tuple[dict[str, Any], set[KeyPath]]:
    """``data`` with ``overrides`` merged in (nested mappings merge, ``None`` means unset),
    and the key paths the overrides set."""
    merged = dict(data)
    touched: set[KeyPath] = set()
    _merge(merged, overrides, (), touched)
    return merged, touched


def _merge(into: dict[str, Any], new: Mapping[str, Any], prefix: KeyPath, touched: set[KeyPath]) -> None:
    for key, value in new.items():
        if value is None:
            continue
        path = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(into.get(key), Mapping):
            into[key] = dict(into[key])
            _merge(into[key], value, path, touched)
        else:
            into[key] = value
            touched.add(path)


_EXPECTED = {
    "int_type": "int", "int_parsing": "int", "int_from_float": "int",
    "float_type": "float", "float_parsing": "float",
    "bool_type": "bool", "bool_parsing": "bool",
    "string_type": "str", "list_type": "list", "dict_type": "a mapping",
}


def _describe(cls: type[BaseModel], exc: ValidationError, source: str, lines: Mapping[KeyPath, int],
              overridden: set[KeyPath]) -> str:
    """One line per problem: ``file:line: key.path ...`` with a suggestion for unknown keys."""
    out = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        dotted = ".".join(str(p) for p in loc)
        if any(loc[: i + 1] in overridden for i in range(len(loc))):
            where = "command line"
        else:
            line = next((lines[loc[:i]] for i in range(len(loc), 0, -1) if loc[:i] in lines), None)
            where = f"{source}:{line}" if line else source
        kind = err["type"]
        if kind == "extra_forbidden":
            known = list(cls.model_fields) if len(loc) == 1 else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            tip = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"{where}: unknown key {dotted!r}{tip}")
        elif kind in _EXPECTED:
            out.append(f"{where}: {dotted} must be {_EXPECTED[kind]}, got {err['input']!r}")
        elif not loc:  # a check across keys
            out.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
        else:
            out.append(f"{where}: {dotted}: {err['msg']}, got {err['input']!r}")
    return "\n".join(out)


__all__ = ["Config", "ConfigError", "merge_overrides", "opt", "parse_overrides", "read_yaml"]
