"""The android recorder (`agentworld collect android`, ``android-v1``) replaying a sequence
of uiautomator dumps.

No machine of ours has an Android device or emulator, so a stand-in ``adb`` on PATH
(tests/_android_adb.py) plays the device: it serves hand-made uiautomator dumps
(tests/fixtures/android/handmade_clock_*.xml, written by hand, not recorded) in order and
logs the input commands it receives. Everything else -- the adb client calls, the dump
reader, the renderer, the gesture-to-input mapping, the recorder and the CLI -- is the real
code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _android_adb import SERIAL, adb_log, device_commands, fake_adb
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs import check_env
from agentworld.envs.android import AdbUnavailable, connect, parse_uiautomator, render
from agentworld.envs.android.env import AndroidEnv
from agentworld.judge.rules.android import parse_tree
from agentworld.records.bench import load_bench_dir
from agentworld.records.trajectory import read_trajectories

FIXTURES = Path(__file__).parent / "fixtures" / "android"
CLOCK = [FIXTURES / f"handmade_clock_{i}.xml" for i in range(4)]
runner = CliRunner()


def _screen(i: int) -> str:
    return render(parse_uiautomator(CLOCK[i].read_text(), CLOCK[i].name)).text


def _task_file(tmp_path: Path, **over: object) -> Path:
    task = {"id": "alarm-1", "task": "Add an alarm labelled 'Gym & swim'", "split": "test",
            "actions": [{"action": "tap", "element": 1}, {"action": "tap", "element": 5},
                        {"action": "type", "text": "Gym & swim", "element": 2}]}
    task.update(over)
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n")
    return path


@pytest.fixture
def adb_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    fake_adb(folder, CLOCK)
    monkeypatch.setenv("PATH", f"{folder}:{__import__('os').environ['PATH']}")
    return folder


def test_collect_android_replays_the_dump_sequence(tmp_path: Path, adb_dir: Path) -> None:
    out, bench = tmp_path / "android.jsonl", tmp_path / "bench"
    res = runner.invoke(app, ["collect", "android", "--tasks", str(_task_file(tmp_path)), "--serial", SERIAL,
                              "--out", str(out), "--bench-dir", str(bench), "--settle", "0"])
    assert res.exit_code == 0, res.output
    [traj] = read_trajectories(out).items
    # The device received home, the taps at the elements' centres and the typed text.
    assert device_commands(adb_dir) == ["input keyevent KEYCODE_HOME", "input tap 180 1825", "input tap 540 2124",
                                        "input tap 540 960", "input text 'Gym%s&%sswim'"]
    assert all(a[:2] == ["-s", SERIAL] for a in adb_log(adb_dir) if a[:1] != ["devices"])
    assert traj.domain == "android" and [json.loads(t.action)["action"] for t in traj.turns] == ["tap", "tap", "type"]
    assert [t.observation for t in traj.turns] == [_screen(1), _screen(2), _screen(3)]
    assert traj.initial_state.endswith(_screen(0)) and "Android 14 (SDK 34)" in traj.initial_state
    assert traj.turns[2].metadata == {"gesture": "type", "x": 540, "y": 960, "elements": 5}
    assert 'value="Gym &amp; swim"' in traj.turns[2].observation
    prov = traj.provenance
    assert prov.source == "real" and prov.split == "test" and prov.job_id == "alarm-1"
    assert prov.device == {"serial": SERIAL, "android_version": "14", "sdk": "34", "model": "sdk_gphone64_x86_64",
                           "manufacturer": "Google"}
    # Held out: benchmark samples whose observations are the recorded screens.
    samples = load_bench_dir(bench).samples
    assert samples and all(s.domain == "android" for s in samples)
    assert samples[-1].ground_truth == _screen(3)
    # A rerun records nothing new (the id is the resume key).
    again = runner.invoke(app, ["collect", "android", "--tasks", str(_task_file(tmp_path)), "--out", str(out),
                                "--settle", "0"])
    assert again.exit_code == 0 and "0 recorded, 1 already there" in again.output
    assert len(read_trajectories(out).items) == 1


def test_observations_are_balanced_markup_with_element_ids() -> None:
    for i in range(4):
        tree = parse_tree(_screen(i))
        assert tree.tags and not tree.errors and not tree.stack
        assert sorted(map(int, tree.ids)) == list(range(len(tree.ids)))


def test_env_keeps_the_contract_and_reports_bad_actions(adb_dir: Path) -> None:
    env = AndroidEnv(serial=SERIAL, settle_s=0)
    check_env(env, actions=['{"name": "check_env_probe"}', '{"action": "tap", "element": 99}',
                            '{"action": "swipe", "direction": "up"}'])
    env = AndroidEnv(serial=SERIAL, settle_s=0)
    env.reset(options={"app": "clock"})  # the one installed package whose name holds "clock"
    assert "am start -n com.android.deskclock/.Main" in device_commands(adb_dir)
    res = env.step('{"action": "tap", "element": 99}')
    assert res.observation.startswith("Error: no element 99") and res.info["is_error"]
    assert env.step('{"action": "type"}').observation == 'Error: type needs a "text" string'
    assert env.step("tap the clock").observation.startswith("Error: the action is not JSON")
    assert env.step('{"action": "open_app", "name": "maps"}').observation == "Error: no installed app matches 'maps'"
    sent = len(device_commands(adb_dir))
    res = env.step('{"action": "type", "text": "café", "element": 1}')
    assert res.observation == "Error: 'input text' types ASCII only" and len(device_commands(adb_dir)) == sent
    env.close()


def test_device_failure_ends_the_episode_as_an_env_failure(tmp_path: Path) -> None:
    exe = fake_adb(tmp_path / "bin", CLOCK, fail_input=False)
    env = AndroidEnv(serial=SERIAL, adb_path=str(exe), settle_s=0)
    env.reset(options={"home": False})
    fake_adb(tmp_path / "bin", CLOCK, fail_input=True)  # the device goes away mid-episode
    res = env.step('{"action": "back"}')
    assert res.truncated and res.info["env_failure"] and "device offline" in res.observation


def test_missing_adb_or_device_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _task_file(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    res = runner.invoke(app, ["collect", "android", "--tasks", str(tasks)])
    assert res.exit_code == 2 and "adb is not installed" in res.output and "Traceback" not in res.output
    for devices, message in (([], "no Android device"), ([(SERIAL, "unauthorized")], "is unauthorized"),
                             ([(SERIAL, "device"), ("emulator-5556", "device")], "choose one with --serial")):
        exe = fake_adb(tmp_path / f"bin{len(devices)}{message[:3]}", CLOCK, devices=devices)
        with pytest.raises(AdbUnavailable, match=message):
            connect(adb_path=str(exe))
        res = runner.invoke(app, ["collect", "android", "--tasks", str(tasks), "--adb", str(exe)])
        assert res.exit_code == 2 and "Traceback" not in res.output


def test_bad_task_file_names_file_and_line(tmp_path: Path, adb_dir: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "a", "task": "t", "actions": [{"action": "back"}]}\n{"id": "b", "task": "t", '
                    '"actions": [{"action": "fly"}]}\nnot json\n')
    res = runner.invoke(app, ["collect", "android", "--tasks", str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{path}:2: actions[0]: unknown action 'fly'" in res.output.replace("\n", "")
    assert f"{path}:3: not JSON" in res.output.replace("\n", "")
    assert adb_log(adb_dir) == []  # nothing reached the device


def test_raw_dumps_import_back_as_the_same_trajectory(tmp_path: Path, adb_dir: Path) -> None:
    from agentworld.data.importers.android import import_android

    out, dumps = tmp_path / "android.jsonl", tmp_path / "dumps"
    tasks = _task_file(tmp_path, actions=[{"action": "tap", "element": 1}, {"action": "tap", "element": 42},
                                          {"action": "tap", "element": 5}])
    res = runner.invoke(app, ["collect", "android", "--tasks", str(tasks), "--out", str(out), "--dumps", str(dumps),
                              "--settle", "0"])
    assert res.exit_code == 0, res.output
    [rec] = read_trajectories(out).items
    assert rec.turns[1].observation.startswith("Error: no element 42")  # the screen stayed: no dump for it
    assert sorted(p.name for p in (dumps / "alarm-1").iterdir()) == ["0.xml", "1.xml", "2.xml", "episode.json"]
    [imp] = import_android([dumps], "uiautomator").trajectories
    assert imp.initial_state.split("\n", 1)[1] == rec.initial_state.split("\n", 1)[1]
    assert [t.observation for t in imp.turns] == [rec.turns[0].observation, rec.turns[2].observation]
    assert [t.action for t in imp.turns] == [rec.turns[0].action, rec.turns[2].action]


def _policy_store(path: Path, replies: list[str]) -> Path:
    """A nearest-neighbour policy: the served retrieval model answers the gesture recorded
    after the screen most like the one it is shown (hand-made screens, scripted gestures)."""
    from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

    turns = [Turn(action=_screen(i), observation=reply) for i, reply in enumerate(replies)]
    write_trajectories(path, [Trajectory(id="policy", domain="android", turns=turns)])
    return path


@pytest.mark.slow
def test_llm_agent_records_through_a_real_model_server(tmp_path: Path, adb_dir: Path) -> None:
    from agentworld.envs.android.agent import read_reply
    from agentworld.launch import launched

    assert read_reply('<predicted_observation>{"action": "back"}</predicted_observation>') == '{"action": "back"}'
    assert read_reply('I will tap. {"action": "tap"} then {"action": "done"}') == "done"
    assert read_reply('{"action": "tap"}') is None and read_reply("tap the clock") is None
    gestures = ['{"action": "tap", "element": 1}', '{"action": "tap", "element": 5}',
                '{"action": "type", "text": "Gym & swim", "element": 2}', '{"action": "done"}']
    good = _policy_store(tmp_path / "good.jsonl", gestures)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "agent-1", "task": "Add an alarm labelled 'Gym & swim'"}) + "\n")
    out = tmp_path / "android.jsonl"
    with launched("serve", "--backend", f"retrieval:{good},domain=android") as url:
        res = runner.invoke(app, ["collect", "android", "--tasks", str(tasks), "--out", str(out), "--settle", "0",
                                  "--agent", f"openai:nn-policy@{url}/v1"])
    assert res.exit_code == 0, res.output
    [traj] = read_trajectories(out).items
    assert [t.action for t in traj.turns] == gestures[:3]
    assert [t.observation for t in traj.turns] == [_screen(1), _screen(2), _screen(3)]
    assert traj.provenance.agent == "nn-policy" and traj.provenance.finished == "done"
    assert traj.provenance.device["serial"] == SERIAL
    # A model that never answers with a gesture ends the episode, with nothing sent to the device.
    bad = _policy_store(tmp_path / "bad.jsonl", ["Let me look at the screen first."] * 4)
    tasks.write_text(json.dumps({"id": "agent-2", "task": "Add an alarm"}) + "\n")
    before = len(device_commands(adb_dir))
    with launched("serve", "--backend", f"retrieval:{bad},domain=android") as url:
        res = runner.invoke(app, ["collect", "android", "--tasks", str(tasks), "--out", str(out), "--settle", "0",
                                  "--agent", f"openai:nn-policy@{url}/v1"])
    assert res.exit_code == 0, res.output
    agent2 = read_trajectories(out).items[-1]
    assert agent2.provenance.finished == "invalid_actions" and agent2.turns == []
    assert device_commands(adb_dir)[before:] == ["input keyevent KEYCODE_HOME"]  # the reset only
