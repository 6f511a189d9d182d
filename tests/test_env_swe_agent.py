"""The LLM-agent driver against a real OpenAI-compatible server (``agentworld serve``).

The served model is the retrieval backend over a recorded agent policy (task -> run the
tests, test failure -> view the file, file view -> stop): a real server answering real
chat requests, whose answers carry tool calls as text, as many local servers do.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from agentworld.envs.agent import tool_response
from agentworld.envs.swe import REPOS, SweEnv, tool_call
from agentworld.envs.swe.agent import agent_config, run_agent, text_tool_call
from agentworld.launch import launched
from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

pytestmark = pytest.mark.sandbox


def test_text_tool_calls_are_recognised() -> None:
    call = tool_call("bash", command="ls")
    assert text_tool_call(f"Let me look.\n<tool_call>\n{call}\n</tool_call>") == call
    assert text_tool_call(f"<predicted_observation>\n{call}\n</predicted_observation>") == call
    assert text_tool_call('{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}') == call
    assert text_tool_call("The tests pass now.") is None


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory) -> str:
    spec = REPOS["inflection"]
    policy = [
        (f"The repository at {spec.guest_path} ({spec.dist} {spec.version}) has a bug: its test suite fails. "
         f"Find the cause in the library code, fix it with a minimal change and make `cd {spec.guest_path} && "
         f"{spec.test_command}` pass. Do not modify the tests. A Debian 12 (bookworm) sandbox; pytest 9.0.3.",
         tool_call("bash", command=f"cd {spec.guest_path} && {spec.test_command} -x 2>&1 | tail -n 20")),
        (tool_response("FAILED test_inflection.py::test - AssertionError\n1 failed, 9 passed in 1.0s\n"
                       "[Current working directory: /workspace]\n[Command finished with exit code 0]"),
         tool_call("str_replace_editor", command="view", path=f"{spec.guest_path}/inflection/__init__.py",
                   view_range=[1, 5])),
        (tool_response("Here's the result of running `cat -n` on a file:\n     1\t# -*- coding: utf-8 -*-"),
         "I have seen enough of the file."),
    ]
    store = tmp_path_factory.mktemp("policy") / "policy.jsonl"
    write_trajectories(store, [Trajectory(id="policy", domain="swe", turns=[Turn(action=a, observation=o) for a, o in policy])])
    with launched("serve", "--backend", "retrieval:" + str(store), "--served-model-name", "policy") as url:
        yield f"{url}/v1"


@pytest.mark.slow
def test_agent_drives_real_tools_through_a_served_model(policy_server: str) -> None:
    env = SweEnv()
    try:
        config = agent_config("policy", base_url=policy_server, api_key="none", max_turns=5)
        traj = asyncio.run(run_agent(env, config, seed=3, trajectory_id="llm-1", options={"repo": "inflection"}))
    finally:
        env.close()
    assert traj.domain == "swe" and traj.tools and traj.provenance.agent == "policy"
    names = [json.loads(t.action)["name"] for t in traj.turns]
    assert names == ["bash", "str_replace_editor"]
    assert "[Command finished with exit code 0]" in traj.turns[0].observation  # `| tail` exits 0
    assert "failed" in traj.turns[0].observation
    assert traj.turns[1].observation.startswith("Here's the result of running `cat -n` on /workspace/inflection/")
