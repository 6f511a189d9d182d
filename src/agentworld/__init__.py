"""AgentWorld: language world models that play the environment, not the agent.

The public surface is re-exported here; modules whose names start with ``_`` are
internal and may change.
"""

from agentworld._gymnasium import register_on_import
from agentworld.domains import DOMAINS, Domain, get_domain
from agentworld.parsing import ParsedPrediction, Status, parse_judgement, parse_prediction
from agentworld.prompts import build_messages, build_system_prompt, sample_messages
from agentworld.records.bench import BenchSample, load_bench_dir, write_bench_dir
from agentworld.records.trajectory import Provenance, SimContext, Trajectory, Turn, read_trajectories, write_trajectories

__version__ = "0.1.0"

# As Gymnasium packages do: `gymnasium.make("agentworld/Sim-v1")` works once agentworld is imported.
register_on_import()

__all__ = [
    "DOMAINS",
    "BenchSample",
    "Domain",
    "ParsedPrediction",
    "Provenance",
    "SimContext",
    "Status",
    "Trajectory",
    "Turn",
    "build_messages",
    "build_system_prompt",
    "get_domain",
    "load_bench_dir",
    "parse_judgement",
    "parse_prediction",
    "read_trajectories",
    "sample_messages",
    "write_bench_dir",
    "write_trajectories",
]
