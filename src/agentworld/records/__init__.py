"""The record types every stage reads and writes, and turn selection: the lowest layer.

- trajectories (:mod:`.trajectory`): one recorded or simulated episode;
- benchmark samples (:mod:`.bench`): AgentWorldBench records, one evaluated turn each;
- predictions (:mod:`.prediction`) and verdicts (:mod:`.verdict`): the lines of the
  files ``bench infer`` and ``bench judge`` write;
- turn selection (:mod:`.select`): which turns of a trajectory become samples.

Nothing here imports the pipeline (bench), the simulator, training or the CLI.
"""

from agentworld.records.bench import BenchSample, BenchSet, load_bench_dir, write_bench_dir
from agentworld.records.prediction import SCHEMA_VERSION, Prediction, PredictionRecord
from agentworld.records.trajectory import Provenance, SimContext, Trajectory, Turn, read_trajectories, write_trajectories
from agentworld.records.verdict import DIMENSIONS, JudgedRecord, Judgement

__all__ = [
    "DIMENSIONS", "SCHEMA_VERSION", "BenchSample", "BenchSet", "JudgedRecord", "Judgement", "Prediction",
    "PredictionRecord", "Provenance", "SimContext", "Trajectory", "Turn", "load_bench_dir", "read_trajectories",
    "write_bench_dir", "write_trajectories",
]
