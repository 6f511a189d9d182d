"""Imports run one way: no module imports a higher layer, lazily or not.

Layers, low to high (a module may import its own layer and any lower one):
records and formats -> models, executors -> judge -> envs -> data, sim, train, agents -> bench -> cli.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agentworld"
LAYERS: dict[str, int] = {
    # record types, domain knowledge, text formats and shared utilities
    **dict.fromkeys(["records", "domains", "parsing", "prompts", "jsonl", "seeding", "tool_calls", "config",
                     "serving", "launch", "progress", "openmp"], 0),
    # executors: where work runs (threads, Ray tasks, model actors, Ray Data); they may wrap a backend
    **dict.fromkeys(["models", "executors"], 1),
    "judge": 2,
    "envs": 3,
    "_gymnasium": 3,  # the import hook that registers the envs' Gymnasium ids (imported by __init__ only)
    **dict.fromkeys(["data", "sim", "train", "agents"], 4),
    "bench": 5,
    "cli": 6,
}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "agentworld" else None


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.lineno, node.module)]
    return out


def test_every_package_has_a_layer() -> None:
    names = {p.stem if p.is_file() else p.name for p in SRC.iterdir() if not p.name.startswith("__")}
    names.discard("py")  # py.typed
    assert names - set(LAYERS) == set(), "give new top-level modules a layer in LAYERS"


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        own = _package("agentworld." + ".".join(path.relative_to(SRC).with_suffix("").parts))
        if own is None or own.startswith("__"):
            continue  # agentworld/__init__.py re-exports the public API of every layer
        for line, module in _imports(path):
            other = _package(module)
            if other is not None and other in LAYERS and LAYERS[other] > LAYERS[own]:
                upward.append(f"{path.relative_to(SRC)}:{line}: {own} imports {module}")
    assert upward == [], "\n".join(upward)
