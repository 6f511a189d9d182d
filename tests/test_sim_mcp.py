"""The MCP facade, driven by the official MCP SDK client over each transport."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from test_sim_fixtures import READ_TOOLS, ServerThread, mcp_source, mcp_wm  # noqa: F401 (fixtures)

from agentworld.sim import PerturbationSpec, Scenario, SimEnv
from agentworld.sim.mcp_facade import SimulatedToolServer, mcp_tool, tool_result
from agentworld.trajectory import read_trajectories


def _facade(wm, **kw) -> SimulatedToolServer:
    return SimulatedToolServer(SimEnv(wm, Scenario(domain="mcp", tools=READ_TOOLS, task="Read files"), **kw))


async def test_in_process_client_lists_and_calls_simulated_tools(mcp_wm):
    facade = _facade(mcp_wm)
    async with Client(facade.server) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["read_file", "write_file", "list_items"]
        assert tools.tools[0].input_schema["required"] == ["path"]
        res = await client.call_tool("read_file", {"path": "/data/a.txt"})
        assert res.content[0].text == "alpha" and not res.is_error
        listed = await client.call_tool("list_items", {})
        assert len(json.loads(listed.content[0].text)) == 8
        missing = await client.call_tool("drop_database", {})
        assert missing.is_error and "Unknown tool" in missing.content[0].text
    # The client's environment recorded every simulated call (not the refused one).
    [record] = facade.records()
    assert [json.loads(t.action)["name"] for t in record.turns] == ["read_file", "list_items"]


async def test_perturbations_show_up_as_mcp_errors(mcp_wm):
    facade = _facade(mcp_wm, perturbations=PerturbationSpec(rules=[{"kind": "rate_limit", "turns": [2]}]))
    async with Client(facade.server) as client:
        assert not (await client.call_tool("read_file", {"path": "/data/a.txt"})).is_error
        limited = await client.call_tool("read_file", {"path": "/data/a.txt"})
        assert limited.is_error and "429" in limited.content[0].text


def test_schema_and_result_conversion():
    openai_style = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}
    tool = mcp_tool(openai_style)
    assert tool.name == "f" and tool.input_schema["properties"]["x"]["type"] == "integer"
    res = tool_result(json.dumps({"content": [{"type": "text", "text": "boom"}], "isError": True, "structuredContent": {"a": 1}}))
    assert res.is_error and res.content[0].text == "boom" and res.structured_content == {"a": 1}
    assert tool_result("plain text").content[0].text == "plain text"
    with pytest.raises(ValueError, match="no tools"):
        SimulatedToolServer(SimEnv(None, Scenario(domain="mcp")))  # type: ignore[arg-type]


async def test_stdio_server_from_the_command_line(tmp_path: Path, mcp_source: Path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": READ_TOOLS}))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentworld", "sim", "mcp", "-b", "retrieval", "--source", str(mcp_source), "--tools", str(tools),
              "--record", str(tmp_path / "calls.jsonl")],
    )
    async with Client(params, read_timeout_seconds=60) as client:
        assert {t.name for t in (await client.list_tools()).tools} == {"read_file", "write_file", "list_items"}
        res = await client.call_tool("write_file", {"path": "/data/b.txt", "content": "beta"})
        assert "Successfully wrote" in res.content[0].text
    # The server wrote the simulated calls as a trajectory when the client hung up.
    deadline = time.monotonic() + 20
    while not (tmp_path / "calls.jsonl").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    [traj] = read_trajectories(tmp_path / "calls.jsonl", strict=True).items
    assert [json.loads(t.action)["name"] for t in traj.turns] == ["write_file"]


async def test_streamable_http_transport(mcp_wm):
    facade = _facade(mcp_wm)
    with ServerThread(facade.http_app()) as srv:
        async with Client(f"{srv.url}/mcp") as client:
            assert len((await client.list_tools()).tools) == 3
            res = await client.call_tool("read_file", {"path": "/data/a.txt"})
            assert res.content[0].text == "alpha"
