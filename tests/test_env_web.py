"""web-v1 against real Chromium (Debian's) and the real loopback sites: network limits, the
browser's own errors for invalid actions, a few scripted episodes, the ledger on real turns,
and the sweep after a kill."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld.envs.web.sites import missing

CHROMIUM = Path("/usr/bin/chromium")
if problems := missing() + ([] if CHROMIUM.exists() else ["chromium is missing (apt-get install chromium)"]):
    pytest.skip("web prerequisites missing: " + "; ".join(problems), allow_module_level=True)

from agentworld.envs.web import Sites, WebEnv  # noqa: E402
from agentworld.envs.web.episode import parse_reply, run_scripted  # noqa: E402
from agentworld.envs.web.tasks import TEMPLATES, find, make_task, template_families  # noqa: E402
from agentworld.sim.ledger import LedgerState, ledger_for  # noqa: E402

pytestmark = pytest.mark.timeout(300)
TABLE = "http://index.test/pydocs/objects"


@pytest.fixture(scope="module")
def sites():
    with Sites() as s:
        yield s


@pytest.fixture(scope="module")
def env(sites):
    e = WebEnv(sites=sites)
    yield e
    e.close()


def header(obs: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in obs.splitlines()[:6] if ": " in line)


def test_only_the_sites_are_reachable(env, sites):
    first = env.reset(seed=0, options={"start_url": TABLE}).observation
    assert header(first)["URL"] == TABLE and "[" in first
    port = sites.sites["index.test"].port
    for url, error in [("http://example.com/", "ERR_PROXY_CONNECTION_FAILED"),
                       ("http://93.184.216.34/", "ERR_PROXY_CONNECTION_FAILED"),
                       (f"http://127.0.0.1:{port}/", "ERR_PROXY_CONNECTION_FAILED"),  # loopback too: only the names
                       ("http://other.test/", "ERR_NAME_NOT_RESOLVED")]:
        obs = env.step(f"goto({url!r})").observation
        assert obs.startswith(f"Error: Page.goto: net::{error}"), obs[:200]
    assert header(env.step("goto('http://docs.test/library/json.html')").observation)["Title"].startswith("json")
    if sites.netns:  # the servers and the browser live in a namespace with nothing but loopback
        with pytest.raises(OSError, match="unreachable"):
            sites.run_inside(lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
        assert sites.run_inside(lambda: socket.create_connection(("127.0.0.1", port), timeout=2).close()) is None


def test_invalid_actions_show_the_browsers_error_and_change_nothing(env):
    first = env.reset(seed=0, options={"start_url": TABLE}).observation
    unknown = env.step("click('99999')").observation
    assert unknown.startswith("Error: Locator.click: Timeout") and 'waiting for locator("[bid=\\"99999\\"]")' in unknown
    assert unknown.split("\n", 3)[-1] == first.split("\n", 3)[-1] or header(unknown)["URL"] == TABLE
    hidden = env.step("click('3')").observation  # an element of <head>: marked, never displayed
    assert hidden.startswith("Error: Locator.click: Timeout") and "not visible" in hidden
    link = find(first, "link", "home")
    not_input = env.step(f"fill({link!r}, 'x')").observation
    assert not_input.startswith("Error: Locator.fill: Error: Element is not an <input>")
    env.step("goto('data:text/html,<title>d</title><button disabled>Go</button>')")
    obs = env.step("noop()").observation
    disabled = env.step(f"click({find(obs, 'button', 'Go')!r})").observation
    assert disabled.startswith("Error: Locator.click: Timeout") and "not enabled" in disabled
    assert env.step("clik('3')").observation.startswith("Error: invalid action: unknown action 'clik'")
    assert env.step("tab_focus(4)").observation.startswith("Error: tab_focus: no tab 4")
    assert env.step('{"name": "check_env_probe"}').observation.startswith("Error: invalid action:")


def test_search_fill_and_the_ledger_on_real_turns(env):
    first = env.reset(seed=0, options={"start_url": TABLE}).observation
    box = find(first, "searchbox")
    action = f"fill({box!r}, 'dumps')"
    filled = env.step(action).observation
    assert "value='dumps'" in filled and header(filled)["URL"] == TABLE
    rules, state = ledger_for("web"), LedgerState()
    assert rules.check(state, action, filled) == []
    rules.update(state, action, filled)
    assert state.form_values == {box: "dumps"} and state.visited == [TABLE]
    tampered = filled.replace("value='dumps'", "value='loads'")
    assert [c.kind for c in rules.check(state, action, tampered)] == ["form_value"]
    searched = env.step("keyboard_press('Enter')").observation
    assert "_search=dumps" in header(searched)["URL"] and "json.dumps" in searched
    rules.update(state, "keyboard_press('Enter')", searched)
    assert state.form_values == {} and state.visited[-1] == header(searched)["URL"]
    wrong = searched.replace(header(searched)["URL"], "http://index.test/")
    assert [c.kind for c in rules.check(state, f"goto({header(searched)['URL']!r})", wrong)] == ["url"]


def test_tabs_are_listed_and_switched(env):
    env.reset(seed=0, options={"start_url": TABLE, "tabs": ["http://docs.test/library/json.html"]})
    obs = env.step("tab_focus(0)").observation
    assert header(obs)["Tabs"].startswith("[0] 'json") and "(active)" in header(obs)["Tabs"].split(", [1]")[0]
    obs = env.step("new_tab()").observation
    assert header(obs)["URL"] == "about:blank" and "[2] '' (about:blank) (active)" in header(obs)["Tabs"]
    obs = env.step("tab_close()").observation
    assert "[2]" not in header(obs)["Tabs"]


def test_miniwob_task_ends_with_its_reward(env):
    traj = run_scripted(env, make_task(4, "mw_login_user"), trajectory_id="t", seed=4)
    last = traj.turns[-1]
    assert last.metadata["miniwob_reward"] == 1.0 and last.metadata["miniwob_reason"] is None
    assert traj.turns[0].observation.splitlines()[0] == "URL: http://miniwob.test/miniwob/login-user.html"


def test_scripted_templates_record_changed_states_only(env):
    assert len(TEMPLATES) >= 25 and set(template_families().values()) == {"ds", "docs", "mw", "tabs", "err"}
    for name in ("ds_sort_columns", "err_malformed_actions"):
        traj = run_scripted(env, make_task(7, name), trajectory_id=name, seed=7)
        assert len(traj.turns) >= 4 and traj.provenance.task == name
        states = [" ".join(t.observation.split()) for t in traj.turns]
        assert all(a != b for a, b in zip(states, states[1:], strict=False))
        json.dumps(traj.model_dump(mode="json"))


def test_every_template_varies_with_its_seed():
    for name in TEMPLATES:
        tasks = [make_task(seed, name) for seed in range(8)]
        assert all(t.template == name and t.script is not None for t in tasks)
        variants = {(t.description, json.dumps(t.options, sort_keys=True), json.dumps(t.metadata, sort_keys=True))
                    for t in tasks}
        assert len(variants) > 1 or name.startswith("mw_"), name  # MiniWoB pages vary by the seed in the page
    with pytest.raises(KeyError, match="unknown web task template"):
        make_task(0, "nope")


def test_recorded_errors_are_the_actions_not_environment_failures():
    from agentworld.data.filters import FilterConfig, FilterReport, filter_trajectory
    from agentworld.records.trajectory import read_trajectories

    trajs = read_trajectories(Path(__file__).parents[1] / "benchmarks/local/trajectories/web.jsonl").items
    errors = [t for t in trajs if any(u.observation.startswith("Error: ") for u in t.turns)]
    assert errors  # unknown ids, hidden elements, blocked URLs, malformed calls
    report = FilterReport()
    kept = [t for t in trajs if filter_trajectory(t, FilterConfig(), report)]
    assert report.total("dropped_env_failure") == 0
    assert len(kept) == len([t for t in trajs if len(t.turns) >= 2])  # one-click MiniWoB tasks are too short


@pytest.mark.slow
def test_collect_web_records_and_resumes(tmp_path):
    from typer.testing import CliRunner

    from agentworld.cli import app

    out = tmp_path / "web.jsonl"
    args = ["collect", "web", "-t", "mw_click_dialog", "-t", "mw_arithmetic", "--episodes", "1", "--test-episodes", "1",
            "-o", str(out), "--bench-dir", str(tmp_path)]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert f"{out}: 2 recorded, 0 already there, 0 failed" in res.output
    assert json.loads((tmp_path / "web_test.jsonl").read_text().splitlines()[0])["task"] == "web"
    again = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert f"{out}: 0 recorded, 2 already there, 0 failed" in again.output
    bad = CliRunner().invoke(app, ["collect", "web", "-t", "nope"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "unknown web task template 'nope'" in bad.output


def test_agent_replies_are_read_as_one_action():
    assert parse_reply("I will search.\nfill('24', 'json')") == "fill('24', 'json')"
    assert parse_reply("```\nclick('7')\n```") == "click('7')"
    assert parse_reply("All done.\nDONE") == ""
    assert parse_reply("I am thinking") is None


_CHILD = """
import json, os, sys, time
from agentworld.envs.web import WebEnv
env = WebEnv()
env.reset(options={"start_url": "http://docs.test/index.html"})
pids = [p.pid for p in env.sites._procs if p.args[0] != "unshare"]  # the namespace holder exits by itself
jail = env._browser.jail
jails = [jail, *env.sites.jails.values()]  # the browser's and each site server's
print(json.dumps({"pids": pids, "dir": str(env.sites.dir), "jails": [str(j.dir) for j in jails],
                  "cgroups": [str(d) for j in jails for d in j.cgroup.dirs]}), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_killed_run_is_swept(tmp_path):
    from agentworld.envs.sweep import sweep_now

    env = dict(os.environ, TMPDIR=str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, env=env, text=True)
    try:
        info = json.loads(child.stdout.readline())
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    tagged = _tagged_pids(child.pid)
    assert set(info["pids"]) <= tagged  # the servers outlive their owner until a sweep
    report = sweep_now(tmp_path)
    # The sites' folder, the browser jail's and the three site servers' jails.
    assert report.web_dirs == 5 and report.processes >= len(info["pids"])
    deadline = time.monotonic() + 10
    while _tagged_pids(child.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _tagged_pids(child.pid) and not Path(info["dir"]).exists()
    assert not any(Path(d).exists() for d in info["jails"])
    assert not any(Path(d).exists() for d in info["cgroups"])


def _tagged_pids(owner: int) -> set[int]:
    """Processes whose environment names ``owner`` as their owner (servers, browser and its children)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            except OSError:
                continue
            if f"AGENTWORLD_OWNER={owner}:".encode() in environ:
                found.add(int(entry.name))
    return found
