"""The MCP facade, driven by the official MCP SDK client over each transport."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_sim_fixtures import READ_TOOLS, ServerThread

from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import Trajectory, Turn, read_trajectories, write_trajectories
from agentworld.sim import PerturbationSpec, Scenario, SimEnv
from agentworld.sim.mcp_facade import SimulatedToolServer, mcp_tool, tool_result


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
        args=["-m", "agentworld", "sim", "mcp", "-b", "retrieval:" + str(mcp_source), "--tools", str(tools),
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


async def test_arguments_are_checked_against_the_input_schema(mcp_wm):
    facade = _facade(mcp_wm)
    async with Client(facade.server) as client:
        missing = await client.call_tool("read_file", {})
        assert missing.is_error and "Invalid arguments for read_file" in missing.content[0].text and "'path'" in missing.content[0].text
        wrong = await client.call_tool("write_file", {"path": 7, "content": "x"})
        assert wrong.is_error and "path: 7 is not of type 'string'" in wrong.content[0].text
        ok = await client.call_tool("read_file", {"path": "/data/a.txt"})
        assert not ok.is_error
    # Refused calls never reach the world model or the record.
    [record] = facade.records()
    assert record.num_turns == 1


async def test_each_http_session_gets_its_own_environment(mcp_wm):
    from agentworld.serving import ServerPolicy, guarded

    finished = []
    facade = SimulatedToolServer(SimEnv(mcp_wm, Scenario(domain="mcp", tools=READ_TOOLS)), on_finish=finished.append)
    policy = ServerPolicy(token="t0k")
    with ServerThread(guarded(facade.http_app(), policy), policy) as srv:
        # The token guards the MCP endpoint too.
        refused = httpx.post(f"{srv.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        auth = {"Authorization": "Bearer t0k"}
        async with (
            create_mcp_http_client(headers=auth) as http_a,
            create_mcp_http_client(headers=auth) as http_b,
            Client(streamable_http_client(f"{srv.url}/mcp", http_client=http_a), mode="legacy") as a,
            Client(streamable_http_client(f"{srv.url}/mcp", http_client=http_b), mode="legacy") as b,
        ):
            await a.call_tool("write_file", {"path": "/data/b.txt", "content": "beta"})
            await b.call_tool("read_file", {"path": "/data/a.txt"})
            await b.call_tool("list_items", {})
    assert sorted(r.num_turns for r in facade.records()) == [1, 2]
    assert facade.close_all() == 2 and len(finished) == 2 and facade.records() == []


async def test_long_sessions_keep_a_bounded_prompt_and_the_whole_ledger(mcp_wm):
    facade = SimulatedToolServer(SimEnv(mcp_wm, Scenario(domain="mcp", tools=READ_TOOLS)), history_turns=2, max_clients=1)
    await facade.call("write_file", {"path": "/data/b.txt", "content": "beta"})
    for _ in range(4):
        await facade.call("read_file", {"path": "/data/a.txt"})
    env = facade.clients["default"].env  # direct calls without a client name
    messages = env.messages_for(json.dumps({"name": "list_items", "arguments": {}}))
    assert len([m for m in messages if m["role"] == "user"]) == 3  # two kept turns + the new call
    assert env.ledger.files.get("/data/b.txt") == "beta" and env.turn == 5
    assert "/data/b.txt" in messages[0]["content"]  # the dropped turn's write is still in the prompt's state
    # One client at most: a second one ends the first.
    await facade.call("list_items", {}, client="other")
    assert list(facade.clients) == ["other"]


GRAPH = {"type": "object", "properties": {"entities": {"type": "array"}, "relations": {"type": "array"}},
         "required": ["entities", "relations"]}
GRAPH_TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}, "outputSchema": GRAPH}
    for name in ("read_graph", "search_nodes", "open_nodes", "delete_nodes")
] + [{"name": "odd_schema", "inputSchema": {"type": "object"}, "outputSchema": {"type": "no-such-type"}}]


def _graph_calls(name: str, observation: dict) -> Turn:
    return Turn(action=json.dumps({"name": name, "arguments": {}}), observation=json.dumps(observation))


@pytest.fixture
def graph_wm(tmp_path: Path):
    """A retrieval world model whose recorded results fit, or break, the tools' outputSchema
    as a small world model's predictions do."""
    text = lambda t: [{"type": "text", "text": t}]  # noqa: E731
    graph = {"entities": [{"name": "Ada"}], "relations": []}
    turns = [
        _graph_calls("read_graph", {"content": text(json.dumps(graph))}),  # JSON text, no structuredContent
        _graph_calls("search_nodes", {"content": text("no matches"), "structuredContent": {"entities": "none"}}),
        _graph_calls("open_nodes", {"content": text("Node Ada: a mathematician")}),  # plain text, nothing structured
        _graph_calls("delete_nodes", {"content": text("Node not found"), "isError": True}),
        _graph_calls("odd_schema", {"content": text("ok")}),
    ]
    path = tmp_path / "graph.jsonl"
    write_trajectories(path, [Trajectory(id="g1", domain="mcp", tools=GRAPH_TOOLS, task_description="Memory", turns=turns)])
    return WorldModel(load_backend("retrieval", source=path, domain="mcp"))


async def test_predicted_results_fit_the_output_schema_or_are_tool_errors(graph_wm):
    facade = SimulatedToolServer(SimEnv(graph_wm, Scenario(domain="mcp", tools=GRAPH_TOOLS)))
    with ServerThread(facade.http_app()) as srv:
        async with Client(f"{srv.url}/mcp") as client:  # the SDK client checks every result against outputSchema
            graph = await client.call_tool("read_graph", {})
            assert not graph.is_error and graph.structured_content == {"entities": [{"name": "Ada"}], "relations": []}
            wrong = await client.call_tool("search_nodes", {"query": "Ada"})
            assert wrong.is_error and wrong.structured_content is None
            assert wrong.content[0].text == ("The simulated search_nodes result does not fit the tool's outputSchema: "
                                             "(structuredContent): 'relations' is a required property; entities: 'none' is not of type 'array'")
            plain = await client.call_tool("open_nodes", {})
            assert plain.is_error and "open_nodes result has no structured content" in plain.content[0].text
            # A predicted tool error needs no structured content; a malformed schema is not advertised.
            assert (await client.call_tool("delete_nodes", {})).content[0].text == "Node not found"
            assert (await client.call_tool("odd_schema", {})).content[0].text == "ok"
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["read_graph"].output_schema == GRAPH and listed["odd_schema"].output_schema is None
    # The session continued from, and recorded, the errors the client saw.
    [record] = facade.records()
    observed = [json.loads(t.observation) for t in record.turns]
    assert observed[1]["isError"] and "does not fit" in observed[1]["content"][0]["text"]
    assert observed[2]["isError"] and not observed[0].get("isError")
