"""The simulator: a world model served as an environment.

``SimEnv`` plays a :class:`Scenario` with a per-session state ledger and seeded
perturbations; ``agentworld.sim.server`` serves sessions over HTTP/WebSocket,
``agentworld.sim.mcp_facade`` over MCP; ``agentworld.sim.worlds`` builds fictional
worlds for search; ``agentworld.sim.drift`` compares the simulator with a real env.
"""

from agentworld.sim.env import FAILED, SimEnv, SimState, SimTurn
from agentworld.sim.ledger import Conflict, LedgerState, ledger_for
from agentworld.sim.perturb import Injection, PerturbationSpec, Rule
from agentworld.sim.scenario import Scenario

__all__ = [
    "FAILED",
    "Conflict",
    "Injection",
    "LedgerState",
    "PerturbationSpec",
    "Rule",
    "Scenario",
    "SimEnv",
    "SimState",
    "SimTurn",
    "ledger_for",
]
