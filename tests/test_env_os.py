"""The real desktop environment: mousepad and galculator under Xvfb with AT-SPI, inside the
hardened sandbox. One session per test keeps the file to about a minute."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from agentworld.domains.os import tree_nodes
from agentworld.envs import check_registered
from agentworld.envs.os import TEMPLATES, DesktopEnv
from agentworld.envs.os.drivers import parse_agent_reply, run_agent, run_scripted
from agentworld.envs.os.task import keys, write
from agentworld.envs.sandbox import SandboxUnavailable
from agentworld.envs.split import split_templates

pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(300)]
REPO = Path(__file__).resolve().parents[1]


def _need_desktop() -> None:
    from agentworld.envs.os.rootfs import desktop_rootfs
    from agentworld.envs.sandbox.prereq import check_host

    try:
        check_host()
        desktop_rootfs(build=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"desktop sandbox missing: {exc} ({exc.fix})")


@pytest.fixture(scope="module")
def env() -> DesktopEnv:
    _need_desktop()
    with DesktopEnv(action_timeout_s=3) as e:
        yield e


# -- templates (no session) -----------------------------------------------------------------


def test_templates_are_seeded_and_split_by_template() -> None:
    assert len(TEMPLATES) >= 25
    cats = set(TEMPLATES.families().values())
    assert {"editing", "saving", "dialogs", "menus"} <= cats
    t = TEMPLATES.get("append_line")
    assert t.instance(5) == t.instance(5) or t.instance(5).description == t.instance(5).description
    assert len({TEMPLATES.get("save_new_document").instance(s).description for s in range(6)}) > 1
    split = split_templates("os", TEMPLATES.names(), families=TEMPLATES.families())
    assert split.train and split.test and not set(split.train) & set(split.test)


def test_parse_agent_reply() -> None:
    assert parse_agent_reply("Let me type.\n```python\nimport pyautogui\npyautogui.write('a')\n```") == \
        "import pyautogui\npyautogui.write('a')"
    assert parse_agent_reply("DONE") == "DONE" and parse_agent_reply("wait.") == "WAIT"
    assert parse_agent_reply("pyautogui.press('enter')") == "pyautogui.press('enter')"
    assert parse_agent_reply("I would open the menu first.") is None


# -- a real session ------------------------------------------------------------------------


def test_scripted_episode_saves_a_real_file(env: DesktopEnv) -> None:
    task = TEMPLATES.get("append_line").instance(7)
    traj = run_scripted(env, task, seed=7, trajectory_id="t")
    name = next(iter(task.files))
    saved = env.sandbox.read_file(f"/workspace/{name}")  # type: ignore[union-attr]
    assert saved.startswith(task.files[name]) and saved != task.files[name]
    assert traj.domain == "os" and traj.initial_state and "mousepad" in traj.initial_state
    last = traj.turns[-1].observation
    frames = [n for n in tree_nodes(last) if n.role == "frame"]
    assert frames and frames[0].name == f"/workspace/{name} - Mousepad"  # no '*': saved
    assert "Windows:\n  * '/workspace/" in last and "Focused: text" in last
    # Turns that changed nothing were dropped (SPEC section 5).
    obs = [env.context().initial_state] + [t.observation for t in traj.turns]
    assert all(a != b for a, b in zip(obs[1:], obs[2:], strict=False))


def test_invalid_programs_show_the_real_error(env: DesktopEnv) -> None:
    env.reset(seed=1, options={"task": "find_bar"})
    res = env.step("import pyautogui\npyautogui.writ('x')")
    assert "AttributeError: module 'pyautogui' has no attribute 'writ'" in res.observation
    assert res.info["error"].startswith("AttributeError") and res.info["exit_code"] == 1
    assert '  File "<action>", line 2, in <module>' in res.observation
    assert "Windows:" in res.observation and not res.terminated
    res = env.step("pyautogui.write('x'")
    assert "SyntaxError" in res.observation and "SyntaxError" in res.info["error"]
    res = env.step("import time\nprint('started', flush=True)\ntime.sleep(60)")
    assert "Error: the program did not finish in time and was stopped" in res.observation
    assert "Output:\nstarted" in res.observation and res.info["error"] == "the program ran past 3 s and was stopped"
    res = env.step(keys("ctrl", "f"))
    assert "Focused: text" in res.observation and res.info["exit_code"] == 0
    done = env.step("DONE")
    assert done.terminated and done.observation == res.observation.split("\nOutput:")[0]


def test_actions_cannot_escape_the_sandbox(env: DesktopEnv, host_http_port: int) -> None:
    env.reset(seed=2, options={"task": "calc_keyboard"})
    marker = f"/tmp/aw-os-escape-{uuid.uuid4().hex}"
    probe = textwrap.dedent(f"""
        import os, socket
        def attempt(what, fn):
            try:
                fn()
                print(what, "ALLOWED")
            except OSError as exc:
                print(what, "denied", type(exc).__name__)
        attempt("host-http", lambda: socket.create_connection(("127.0.0.1", {host_http_port}), timeout=3))
        attempt("internet", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
        attempt("core_pattern", lambda: os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY)))
        attempt("sysrq", lambda: os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY)))
        # The session driver's pipe to the host: a forged reply would become the observation.
        attempt("driver-pipe", lambda: os.close(os.open("/proc/1/fd/1", os.O_WRONLY)))
        with open({marker!r}, "w") as fh:
            fh.write("inside")
        print("caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
        print("uid", open("/proc/self/uid_map").read().split())
    """)
    res = env.step(probe)
    out = res.observation.split("Output:\n", 1)[1]
    assert "ALLOWED" not in out, out
    for what in ("host-http", "internet", "core_pattern", "sysrq", "driver-pipe"):
        assert f"{what} denied" in out, out
    assert "caps 0000000000000000" in out
    assert not os.path.exists(marker)  # written in the episode's own layer only
    assert env.sandbox.read_file(marker) == "inside"  # type: ignore[union-attr]


def test_desktop_keeps_the_env_contract() -> None:
    _need_desktop()
    report = check_registered("os-v1", actions=[write("conformance"), "DONE"], options={"task": "calc_keyboard"},
                              seed=3)
    assert report.ended and report.steps == 2


def test_agent_driver_records_a_real_episode(env: DesktopEnv, tmp_path: Path) -> None:
    from test_terminal_agent import _Server

    from agentworld.records.trajectory import Trajectory, Turn, write_trajectories

    task = TEMPLATES.get("calc_keyboard").instance(4)
    first = env.reset(seed=4, options={"task": task}).observation
    # The policy: whatever screen it sees, the closest stored one says what to do next.
    replies = [f"```python\n{write('12')}\n```", "```python\nimport pyautogui\npyautogui.press('enter')\n```"]
    store = tmp_path / "policy.jsonl"
    write_trajectories(store, [Trajectory(id="policy", domain="terminal",
                                          turns=[Turn(action=first, observation=replies[0])])])
    from agentworld.envs.os.drivers import AgentConfig

    with _Server(store) as url:
        import asyncio

        config = AgentConfig(model="nn-policy", base_url=url, max_turns=2)
        traj = asyncio.run(run_agent(env, task, config, seed=4, trajectory_id="agent"))
    assert traj.turns and traj.turns[0].action == write("12")
    assert "text='12'" in traj.turns[0].observation
    assert traj.provenance.agent == "nn-policy"


@pytest.mark.slow
def test_kill_9_leaves_nothing(sandbox_tmp: Path) -> None:
    _need_desktop()
    tmpdir = sandbox_tmp / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONPATH=str(REPO / "src"))
    code = ("from agentworld.envs.os import DesktopEnv\nimport time\ne = DesktopEnv()\n"
            "e.reset(options={'task': 'calc_keyboard'})\nprint('up', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"  # type: ignore[union-attr]
        assert list(tmpdir.glob("aw-sandbox-*"))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    sweep = subprocess.run([sys.executable, "-c", "from agentworld.envs.sweep import sweep_now; print(sweep_now())"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert sweep.returncode == 0, sweep.stderr
    deadline = time.monotonic() + 10
    while list(tmpdir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmpdir.iterdir()) == []
    mounts = Path("/proc/mounts").read_text()
    assert str(tmpdir) not in mounts


def test_collect_os_records_and_resumes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.cli import app

    bad = CliRunner().invoke(app, ["collect", "os", "-t", "no-such-task"], env={"COLUMNS": "300"})
    assert bad.exit_code != 0 and "unknown os task template 'no-such-task'" in bad.output
    _need_desktop()
    out = tmp_path / "os.jsonl"
    args = ["collect", "os", "-t", "calc_clear", "--episodes", "1", "--test-episodes", "0", "--no-build", "-o", str(out)]
    first = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert first.exit_code == 0, first.output
    assert f"{out}: 1 recorded, 0 already there, 0 failed" in first.output
    again = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert f"{out}: 0 recorded, 1 already there, 0 failed" in again.output
