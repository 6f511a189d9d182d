"""AgentWorldBench: the record format, turn selection, and the infer -> judge -> score chain.

- ``format``: the per-domain JSONL records (exact round trip);
- ``select``: which turns of a trajectory become samples;
- ``infer``: run a world model over samples (resumable, append-only);
- ``judging``: verdicts from the offline rule scorer and LLM judges (resumable);
- ``score`` / ``report``: official normalization, agreement, Markdown/HTML reports.
"""

from __future__ import annotations

import importlib
from typing import Any

# Imported on first use: `agentworld bench infer` should not pay for judging, scoring
# and reporting (nor `import agentworld` for any of them).
_EXPORTS = {
    "BenchSample": "format", "BenchSet": "format", "load_bench_dir": "format", "write_bench_dir": "format",
    "PredictionRecord": "infer", "load_predictions": "infer", "run_infer": "infer", "select_samples": "infer",
    "JudgedRecord": "judging", "load_judgements": "judging", "run_judging": "judging",
    "write_report": "report",
    "ScoreReport": "score", "normalize": "score", "score_records": "score",
    "TurnPolicy": "select", "select_turns": "select", "trajectories_to_samples": "select",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'agentworld.bench' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agentworld.bench.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)
