"""AgentWorldBench: the record format, turn selection, and (later) infer/judge/score."""

from agentworld.bench.format import BenchSample, BenchSet, load_bench_dir, write_bench_dir
from agentworld.bench.select import TurnPolicy, select_turns, trajectories_to_samples

__all__ = [
    "BenchSample",
    "BenchSet",
    "TurnPolicy",
    "load_bench_dir",
    "select_turns",
    "trajectories_to_samples",
    "write_bench_dir",
]
