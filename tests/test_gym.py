"""gymnasium.make drives the simulator and the real terminal env under agentworld/ ids."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from test_sim_fixtures import ks, screen

from agentworld.envs import registered
from agentworld.envs.gym import MAX_TEXT, AnyText, GymEnv, gym_id, register_envs
from agentworld.sim import Scenario

PROMPT = "root@sandbox:/workspace# "


def test_every_env_registers_under_the_namespace() -> None:
    ids = register_envs()
    assert ids == [gym_id(e) for e in registered()] and register_envs() == ids  # again: a no-op
    assert {"agentworld/Terminal-v1", "agentworld/Sim-v1", "agentworld/FictionalSearch-v1"} <= set(ids)
    assert all(i in gymnasium.registry for i in ids)


MAKE = """
import json, sys
{imports}
from agentworld.envs import registered
from agentworld.envs.gym import gym_id
from agentworld.models import WorldModel, load_backend
from agentworld.sim import Scenario

wm = WorldModel(load_backend("retrieval", source=sys.argv[1], domain="terminal"))
env = gym.make("agentworld/Sim-v1", world_model=wm, scenario=Scenario(domain="terminal", first_observation="$ "))
obs, _ = env.reset(seed=0)
ours = sorted(k for k in gym.registry if k.startswith("agentworld/"))
print(json.dumps({{"obs": obs, "all": ours == sorted(gym_id(e) for e in registered()), "light": light}}))
"""


@pytest.mark.parametrize("imports", [
    "import gymnasium as gym, agentworld; light = True",
    # Sorted imports put agentworld first: it registers once Gymnasium is imported, without importing it itself.
    "import agentworld; light = not {'gymnasium', 'numpy', 'torch'} & set(sys.modules); import gymnasium as gym",
])
def test_importing_agentworld_registers_the_ids_in_a_fresh_interpreter(imports: str, tmp_path) -> None:
    from test_sim_fixtures import terminal_trajectories

    from agentworld.records.trajectory import write_trajectories

    source = tmp_path / "terminal.jsonl"
    write_trajectories(source, terminal_trajectories())
    done = subprocess.run([sys.executable, "-c", MAKE.format(imports=imports), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"obs": "$ ", "all": True, "light": True}


def test_text_space_holds_any_text() -> None:
    space = AnyText()
    assert space.contains("ünïcode; $(quotes) '\"\x1b[0m\n") and space.contains("")
    assert not space.contains("a" * (MAX_TEXT + 1)) and not space.contains(3)
    sample = space.sample()
    assert isinstance(sample, str) and len(sample) <= 64


def test_gymnasium_make_drives_the_simulator_and_check_env_passes(terminal_wm) -> None:
    register_envs()
    scenario = Scenario(domain="terminal", first_observation=PROMPT, success_patterns=["^DONE$"])
    env = gymnasium.make("agentworld/Sim-v1", world_model=terminal_wm, scenario=scenario)
    try:
        obs, info = env.reset(seed=0)
        assert obs == PROMPT and info["domain"] == "terminal"
        obs, reward, terminated, truncated, info = env.step(ks("pwd\n"))
        assert obs == screen("pwd", "/workspace") and reward == 0.0 and not terminated and not truncated
        assert info["turn"] == 1 and "latency_s" not in info and "latency_s" in env.unwrapped.measurements
        assert env.observation_space.contains(obs)
        check_env(env.unwrapped)  # Gymnasium's own checker: spaces, seeding, determinism, returned data
    finally:
        env.close()


@pytest.mark.sandbox
def test_gymnasium_make_drives_the_real_terminal_env() -> None:
    from agentworld.envs.sandbox import ensure_rootfs

    ensure_rootfs()
    register_envs()
    env = gymnasium.make("agentworld/Terminal-v1")
    try:
        assert isinstance(env.unwrapped, GymEnv)
        obs, _ = env.reset(seed=0, options={"files": {"n.txt": "3\n1\n2\n"}})
        assert obs.startswith("root@sandbox:/workspace#")
        obs, reward, terminated, truncated, info = env.step(json.dumps([{"keystrokes": "sort -n n.txt\n", "duration": 3}]))
        assert "1\n2\n3\n" in obs and not terminated and not truncated and isinstance(reward, float)
        assert env.observation_space.contains(obs) and "duration_s" not in info
    finally:
        env.close()
