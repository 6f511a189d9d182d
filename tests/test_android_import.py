"""`agentworld data import android`: public dataset layouts -> android trajectories.

All inputs are hand-made (tests/fixtures/android/handmade_*): small view hierarchies in
the AndroidControl (accessibility forest as proto JSON), uiautomator-dump and RICO
layouts, written by hand for these tests, never recorded or taken from a dataset.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.importers.android import AndroidImportError, import_android
from agentworld.envs.android import from_android_control, parse_action, parse_forest, parse_uiautomator, render
from agentworld.envs.android.hierarchy import HierarchyError
from agentworld.records.trajectory import read_trajectories

FIXTURES = Path(__file__).parent / "fixtures" / "android"
runner = CliRunner()


def test_androidcontrol_episodes(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    res = runner.invoke(app, ["data", "import", "android", "--format", "androidcontrol",
                              str(FIXTURES / "handmade_control.jsonl"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    flat = res.output.replace("\n", "")
    assert "1 trajectories, 2 turns (1 episodes skipped)" in flat
    assert "handmade_control.jsonl:2: episode 102: 2 screens but 3 actions" in flat
    [t] = read_trajectories(out).items
    assert t.id == "androidcontrol-101" and t.domain == "android" and t.task_description.startswith("Start a note")
    assert t.provenance.source == "import" and t.provenance.dataset == "androidcontrol"
    assert [json.loads(x.action) for x in t.turns] == [
        {"action": "tap", "x": 870, "y": 2180},
        {"action": "type", "text": "Groceries", "x": 540, "y": 300, "enter": True}]
    assert t.turns[0].metadata["step_instruction"] == "Tap New note"
    assert t.turns[0].metadata["element"] == 2 and t.turns[1].metadata["element"] == 1  # the button, the field
    assert '<button id="2" class="Button" clickable="true" bounds="[700,2100][1040,2260]">New note</button>' in t.initial_state
    # camelCase proto JSON reads like snake_case; the typed title shows as the field's value
    assert '<input id="1" class="EditText" hint="Title" value="Groceries" clickable="true" focused="true"' in t.turns[1].observation
    assert 'description="Save"' in t.turns[1].observation


def test_uiautomator_episode_folders_in_natural_order(tmp_path: Path) -> None:
    ep = tmp_path / "eps" / "alarm"
    ep.mkdir(parents=True)
    for i, name in enumerate(["1.xml", "2.xml", "10.xml"]):  # 10 sorts after 2
        shutil.copy(FIXTURES / f"handmade_clock_{i + 1}.xml", ep / name)
    (ep / "episode.json").write_text(json.dumps({"goal": "New alarm", "actions": [
        {"action": "tap", "element": 5}, {"action_type": "input_text", "text": "Gym & swim"}]}))
    rep = import_android([tmp_path / "eps"], "uiautomator")
    assert rep.errors == []
    [t] = rep.trajectories
    assert t.id == "uiautomator-alarm" and [x.metadata["screen"] for x in t.turns] == ["2.xml", "10.xml"]
    assert t.turns[1].action == '{"action": "type", "text": "Gym & swim"}'
    expected = render(parse_uiautomator((FIXTURES / "handmade_clock_3.xml").read_text())).text
    assert t.turns[1].observation == expected


def test_rico_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace_0"
    (trace / "view_hierarchies").mkdir(parents=True)
    for i in range(2):
        shutil.copy(FIXTURES / f"handmade_rico_{i}.json", trace / "view_hierarchies" / f"{i}.json")
    (trace / "gestures.json").write_text(json.dumps({"0": [[0.875, 0.109375]], "1": [[0.5, 0.8], [0.5, 0.2]]}))
    [t] = import_android([trace], "rico").trajectories
    assert json.loads(t.turns[0].action) == {"action": "tap", "x": 1260, "y": 280}
    assert 'description="Settings" clickable="true"' in t.initial_state and "Lisbon 21°" in t.initial_state
    assert 'checked="true"' in t.turns[0].observation and "Use Celsius" in t.turns[0].observation


def test_malformed_input_names_where(tmp_path: Path) -> None:
    good = json.loads((FIXTURES / "handmade_control.jsonl").read_text().splitlines()[0])
    dangling = json.loads(json.dumps(good))
    dangling["accessibility_trees"][0]["windows"][0]["tree"]["nodes"][0]["child_ids"] = [2, 99]
    bad_action = {**good, "episode_id": 7, "actions": [{"action_type": "fly"}, good["actions"][1]]}
    no_trees = {"episode_id": 8, "actions": []}
    path = tmp_path / "eps.jsonl"
    path.write_text("\n".join([json.dumps(dangling), "{not json", json.dumps(bad_action), json.dumps(no_trees),
                               json.dumps([1])]) + "\n")
    errors = import_android([path], "androidcontrol").errors
    assert errors[0] == f"{path}:1: episode 101: accessibility_trees[0].windows[0]: node 1 lists child 99, which is not in the tree"
    assert errors[1].startswith(f"{path}:2: not JSON")
    assert errors[2] == f"{path}:3: episode 7: actions[0]: unknown AndroidControl action_type 'fly'"
    assert errors[3] == f"{path}:4: episode 8: 'accessibility_trees' is missing"
    assert errors[4] == f"{path}:5: an episode is an object"
    with pytest.raises(AndroidImportError, match=":1: episode 101"):
        import_android([path], "androidcontrol", strict=True)
    # A broken dump: file and line.
    ep = tmp_path / "ep"
    ep.mkdir()
    (ep / "0.xml").write_text("<hierarchy>\n<node class='a'>\n</hierarchy>\n")
    (ep / "1.xml").write_text((FIXTURES / "handmade_clock_1.xml").read_text())
    (ep / "episode.json").write_text(json.dumps({"actions": [{"action": "back"}]}))
    [err] = import_android([ep], "uiautomator").errors
    assert err.startswith(f"{ep / '0.xml'}:3: not well-formed XML")
    res = runner.invoke(app, ["data", "import", "android", "--format", "uiautomator", str(ep), "-o",
                              str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2 and "no episode could be imported" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["data", "import", "android", "--format", "rico", str(tmp_path / "nope"), "-o", "x"])
    assert res.exit_code == 2 and "no such file or folder" in res.output


def test_readers_reject_what_they_cannot_read() -> None:
    with pytest.raises(HierarchyError, match="bounds 'wide' is not"):
        parse_uiautomator('<hierarchy><node class="a" bounds="wide"/></hierarchy>', "d.xml")
    with pytest.raises(HierarchyError, match="root element is <html>"):
        parse_uiautomator("<html/>", "d.xml")
    chain = [{"unique_id": i, "child_ids": [i + 1]} for i in range(300)] + [{"unique_id": 300}]
    with pytest.raises(HierarchyError, match="nested more than 200 levels"):
        parse_forest({"windows": [{"tree": {"nodes": chain}}]})
    with pytest.raises(HierarchyError, match="nested more than 200 levels"):
        parse_uiautomator("<hierarchy>" + "<node>" * 300 + "</node>" * 300 + "</hierarchy>", "deep.xml")
    with pytest.raises(HierarchyError, match="cycle"):
        parse_forest({"windows": [{"tree": {"nodes": [{"unique_id": 1, "child_ids": [2]},
                                                      {"unique_id": 2, "child_ids": [1]}]}}]})


def test_action_formats() -> None:
    assert from_android_control({"action_type": "scroll", "direction": "down"}) == '{"action": "swipe", "direction": "up"}'
    assert from_android_control('{"action_type": "open_app", "app_name": "Clock"}') == '{"action": "open_app", "name": "Clock"}'
    assert from_android_control({"action_type": "navigate_back"}) == '{"action": "back"}'
    with pytest.raises(ValueError, match="needs numeric 'x' and 'y'"):
        from_android_control({"action_type": "click", "x": "a"})
    assert parse_action('{"action": "swipe", "direction": "sideways"}') == 'swipe needs a "direction": one of up, down, left, right'
    assert parse_action('{"action": "tap", "x": 3}') == "give both x and y, or an element"
    assert parse_action('{"action": "wait", "seconds": 2}').seconds == 2.0
