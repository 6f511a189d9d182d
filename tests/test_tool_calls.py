"""The strict and lenient tool-call readers, and the wording environments build on them."""

import json

import pytest

from agentworld.data.filters import called_tools
from agentworld.envs.mcp.env import parse_tool_call as mcp_parse
from agentworld.envs.swe.tools import parse_action as swe_parse
from agentworld.tool_calls import ToolCallError, call_name, decode_arguments, parse_tool_call, read_tool_call


@pytest.mark.parametrize("action, kind", [
    ("ls -la", "not_json"),
    ('{"name": "a",', "not_json"),
    ("[1, 2]", "not_a_call"),
    ('"read_file"', "not_a_call"),
    ('{"tool": "read_file", "args": {}}', "not_a_call"),  # aliases are for the lenient reader only
    ('{"name": 3, "arguments": {}}', "not_a_call"),
    ('{"name": "a", "arguments": "{oops"}', "arguments_not_json"),
    ('{"name": "a", "arguments": [1]}', "arguments_not_object"),
    ('{"name": "a", "arguments": "[1]"}', "arguments_not_object"),
    ('{"name": "a", "arguments": null}', "arguments_not_object"),
])
def test_strict_parser_kinds(action, kind):
    with pytest.raises(ToolCallError) as err:
        parse_tool_call(action)
    assert err.value.kind == kind
    assert isinstance(err.value, ValueError)


def test_strict_parser_reports_json_position():
    with pytest.raises(ToolCallError) as err:
        parse_tool_call('{"name": "a",\n  oops}')
    assert (err.value.msg, err.value.lineno, err.value.colno) == ("Expecting property name enclosed in double quotes", 2, 3)
    with pytest.raises(ToolCallError) as err:
        parse_tool_call('{"name": "a", "arguments": "{\\"x\\": }"}')
    assert err.value.kind == "arguments_not_json" and err.value.colno == 7
    with pytest.raises(ToolCallError) as err:
        parse_tool_call("[]")
    assert err.value.colno is None and err.value.msg == ""


def test_strict_parser_accepts_object_and_string_arguments():
    assert parse_tool_call('{"name": "a", "arguments": {"x": 1}}') == ("a", {"x": 1})
    assert parse_tool_call('{"name": "a", "arguments": "{\\"x\\": 1}"}') == ("a", {"x": 1})
    assert parse_tool_call('{"name": "a", "arguments": ""}') == ("a", {})
    assert parse_tool_call('{"name": "a"}') == ("a", {})


def test_decode_arguments():
    assert decode_arguments('{"q": "x"}') == {"q": "x"}
    assert decode_arguments("") == {}
    assert decode_arguments([1]) == [1]  # not a string: left for the caller to judge
    with pytest.raises(ToolCallError, match="arguments_not_json"):
        decode_arguments("q=x")


@pytest.mark.parametrize("action, expected", [
    ('{"name": "read", "arguments": {"path": "a"}}', ("read", {"path": "a"})),
    ('{"tool": "read", "args": {"path": "a"}}', ("read", {"path": "a"})),
    ('{"tool_name": "read", "input": {"path": "a"}}', ("read", {"path": "a"})),
    ('{"name": "read", "arguments": "{\\"path\\": \\"a\\"}"}', ("read", {"path": "a"})),
    ('{"name": "read", "args": "not json"}', ("read", {"input": "not json"})),
    ('{"name": "read", "arguments": {}, "args": {"path": "a"}}', ("read", {"path": "a"})),
    ('{"function": {"name": "read", "arguments": "{\\"path\\": \\"a\\"}"}}', ("read", {"path": "a"})),
    ('{"name": "read"}', ("read", {})),
    ('{"name": "read", "arguments": [1]}', None),
    ('{"name": "read", "arguments": "[1]"}', None),
    ('{"arguments": {"path": "a"}}', None),
    ('{"name": "", "tool": ""}', None),
    ("[1]", None),
    ("cat a", None),
])
def test_lenient_reader(action, expected):
    assert read_tool_call(action) == expected


def test_lenient_reader_takes_non_text():
    assert read_tool_call(None) is None
    assert read_tool_call(b'{"name": "a"}') == ("a", {})


def test_call_name():
    assert call_name({"name": "a", "tool": "b"}) == "a"
    assert call_name({"tool_name": "c"}) == "c"
    assert call_name({"function": {"name": "d"}}) == "d"
    assert call_name({"arguments": {}}) is None
    assert called_tools(json.dumps([{"tool_name": "a"}, {"name": ""}])) == ["a", None]


# The environments' wording is recorded in shipped trajectories: pinned byte for byte.
WORDING = [
    ("ls", "Parse error: action is not JSON (Expecting value at column 1)",
     "the action is not a JSON tool call (Expecting value at column 1)"),
    ("[]", 'Invalid request: expected {"name": <tool name>, "arguments": {...}}',
     'the action must be a JSON object {"name": "<tool>", "arguments": {...}}'),
    ('{"name": "bash", "arguments": "{x"}', "Invalid params: arguments is not a JSON object",
     "the tool arguments are not valid JSON (Expecting property name enclosed in double quotes)"),
    ('{"name": "bash", "arguments": 5}', "Invalid params: arguments must be a JSON object",
     "the tool arguments must be a JSON object"),
]


@pytest.mark.parametrize("action, mcp_message, swe_message", WORDING)
def test_environment_wording(action, mcp_message, swe_message):
    assert mcp_parse(action) == mcp_message
    with pytest.raises(ValueError) as err:
        swe_parse(action)
    assert str(err.value) == swe_message


def test_environments_return_calls():
    action = '{"name": "bash", "arguments": {"command": "ls"}}'
    assert mcp_parse(action) == swe_parse(action) == ("bash", {"command": "ls"})
    with pytest.raises(ValueError, match="unknown tool 'nope'; available tools: bash"):
        swe_parse('{"name": "nope"}')
