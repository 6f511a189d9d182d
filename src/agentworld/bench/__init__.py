"""AgentWorldBench: the record format, turn selection, and the infer -> judge -> score chain.

- ``format``: the per-domain JSONL records (exact round trip);
- ``select``: which turns of a trajectory become samples;
- ``infer``: run a world model over samples (resumable, append-only);
- ``judging``: verdicts from the offline rule scorer and LLM judges (resumable);
- ``score`` / ``report``: official normalization, agreement, Markdown/HTML reports.
"""

from agentworld.bench.format import BenchSample, BenchSet, load_bench_dir, write_bench_dir
from agentworld.bench.infer import PredictionRecord, load_predictions, run_infer, select_samples
from agentworld.bench.judging import JudgedRecord, load_judgements, run_judging
from agentworld.bench.report import write_report
from agentworld.bench.score import ScoreReport, normalize, score_records
from agentworld.bench.select import TurnPolicy, select_turns, trajectories_to_samples

__all__ = [
    "BenchSample",
    "BenchSet",
    "JudgedRecord",
    "PredictionRecord",
    "ScoreReport",
    "TurnPolicy",
    "load_bench_dir",
    "load_judgements",
    "load_predictions",
    "normalize",
    "run_infer",
    "run_judging",
    "score_records",
    "select_samples",
    "select_turns",
    "trajectories_to_samples",
    "write_bench_dir",
    "write_report",
]
