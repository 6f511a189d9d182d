"""terminal-v1: real tmux + bash in a real bwrap sandbox."""

from __future__ import annotations

import json

import pytest

from agentworld.envs import make, record_episode
from agentworld.envs.sandbox import ensure_rootfs
from agentworld.envs.terminal import ActionError, TerminalEnv, action_json, parse_action

pytestmark = pytest.mark.sandbox
PROMPT = "root@sandbox:/workspace#"


@pytest.fixture(scope="module")
def env():
    ensure_rootfs()
    e = TerminalEnv()
    yield e
    e.close()


def step(env: TerminalEnv, *batches: tuple[str, float]):
    return env.step(action_json(*batches))


def test_parse_action() -> None:
    b = parse_action('[{"keystrokes": "ls\\n", "duration": 0.5}, {"keystrokes": "C-c"}]')
    assert [x.keystrokes for x in b] == ["ls\n", "C-c"] and b[1].duration == 1.0
    assert b[0].tmux_commands() == ["send-keys -H 6c 73", "send-keys Enter"]
    assert b[1].tmux_commands() == ["send-keys 'C-c'"] and b[1].submits
    assert parse_action({"keystrokes": "x", "duration": 999})[0].duration == 60.0
    # text goes as bytes: nothing in it (";", quotes, "$", UTF-8) is read as tmux syntax
    assert parse_action('[{"keystrokes": "é;\'$"}]')[0].tmux_commands() == ["send-keys -H c3 a9 3b 27 24"]
    for bad in ("ls", "[]", '[{"keystrokes": 3}]', '[{"keystrokes": "a", "duration": "soon"}]'):
        with pytest.raises(ActionError):
            parse_action(bad)


def test_reset_builds_state_and_captures_it(env: TerminalEnv) -> None:
    obs, info = env.reset(options={"files": {"data/n.txt": "3\n1\n2\n"}, "env": {"PROJECT": "demo"},
                                   "setup": "mkdir -p /opt/tool && echo v7 > /opt/tool/VERSION"})
    assert obs == PROMPT and info["prompt"]
    state = env.initial_state
    for needle in ("Debian GNU/Linux 12", "Kernel: Linux", "python3: Python 3", "git: git version",
                   "Working directory: /workspace", f"Prompt: {PROMPT}", "data/n.txt (6 bytes, mode 644)",
                   "PROJECT=demo", "Date: "):
        assert needle in state
    r = step(env, ("sort -n data/n.txt; echo $PROJECT; cat /opt/tool/VERSION;\n", 5))
    assert r.observation == f"{PROMPT} sort -n data/n.txt; echo $PROJECT; cat /opt/tool/VERSION;\n1\n2\n3\ndemo\nv7\n{PROMPT}"
    assert r.info["prompt"] and r.info["duration_s"] < 4.5  # returned when the prompt came back


def test_long_command_shows_partial_output_then_ctrl_c(env: TerminalEnv) -> None:
    env.reset()
    # One process, so Ctrl-C always lands on it (a shell loop can race between commands).
    r = step(env, ("python3 -u -c 'import time; [print(f\"tick{i}\") or time.sleep(0.5) for i in range(1, 10)]'\n", 1.5))
    assert "tick1" in r.observation and "tick9" not in r.observation
    assert not r.info["prompt"] and "still_running" in r.info["events"]
    r = step(env, ("C-c", 2))
    assert "^CTraceback" in r.observation and "KeyboardInterrupt" in r.observation
    assert r.observation.endswith(PROMPT) and r.info["prompt"]
    r = step(env, ("", 0.2))  # waiting shows nothing new
    assert r.observation == PROMPT


def test_errors_and_exit_codes(env: TerminalEnv) -> None:
    env.reset()
    r = step(env, ("cat nope; echo rc=$?; nosuchcmd\n", 3))
    assert "cat: nope: No such file or directory\nrc=1" in r.observation
    assert "bash: nosuchcmd: command not found" in r.observation


def test_python_repl_and_traceback(env: TerminalEnv) -> None:
    env.reset()
    r = step(env, ("python3\n", 1.5))
    assert "Python 3.11" in r.observation and r.observation.endswith(">>>")
    r = step(env, ("x = 6 * 7\n", 0.3), ("print(x)\n", 0.4))
    assert r.observation.endswith(">>> print(x)\n42\n>>>")
    r = step(env, ("1/0\n", 0.5))
    assert 'File "<stdin>", line 1, in <module>' in r.observation and "ZeroDivisionError" in r.observation
    r = step(env, ("C-d", 2))
    assert r.observation.endswith(PROMPT) and r.info["prompt"]


def test_vim_nano_and_less(env: TerminalEnv) -> None:
    env.reset(options={"files": {"list.txt": "".join(f"line {i}\n" for i in range(100))}})
    r = step(env, ("vim a.txt\n", 1.0))
    assert r.info["fullscreen"] and '"a.txt" [New]' in r.observation
    r = step(env, ("ihello from vim", 0.2), ("Escape", 0.2), (":wq\n", 1.0))
    assert r.observation == f"{PROMPT} vim a.txt\n{PROMPT}"
    r = step(env, ("nano b.txt\n", 1.0))
    assert "GNU nano" in r.observation and "^X Exit" in r.observation
    step(env, ("hello from nano", 0.2), ("C-o", 0.3), ("\n", 0.3), ("C-x", 1.0))
    r = step(env, ("cat a.txt b.txt\n", 2))
    assert "hello from vim\nhello from nano" in r.observation
    r = step(env, ("less list.txt\n", 1.0))
    assert r.info["fullscreen"] and "line 0" in r.observation and "line 99" not in r.observation
    r = step(env, ("G", 0.5))
    assert "line 99" in r.observation
    r = step(env, ("q", 0.5))
    assert r.observation.endswith(PROMPT) and not r.info["fullscreen"]


def test_job_control_and_tty(env: TerminalEnv) -> None:
    env.reset()
    step(env, ("sleep 30\n", 0.3))
    r = step(env, ("C-z", 1))
    assert "Stopped" in r.observation and r.observation.endswith(PROMPT)
    r = step(env, ("bg; jobs; tty\n", 1))
    assert "[1]+ sleep 30 &" in r.observation and "/dev/pts/0" in r.observation
    r = step(env, ("kill %1\n", 1))
    assert r.info["prompt"]


def test_invalid_action_changes_nothing(env: TerminalEnv) -> None:
    env.reset()
    r = env.step("ls -la")
    assert "error" in r.info and r.observation == PROMPT


def test_exit_terminates_and_registry_and_recording() -> None:
    with make("terminal-v1") as e:
        traj = record_episode(e, [action_json(("echo hi\n", 2)), action_json(("exit\n", 2)),
                                  action_json(("echo never\n", 1))],
                              trajectory_id="t0", seed=3)
    assert traj.domain == "terminal" and len(traj.turns) == 2  # stopped when the shell exited
    assert traj.turns[0].observation == f"{PROMPT} echo hi\nhi\n{PROMPT}"
    assert "shell_exited" in traj.turns[1].metadata["events"]
    assert "Debian" in (traj.initial_state or "")
    assert json.loads(traj.turns[0].action)[0]["keystrokes"] == "echo hi\n"


def test_fork_copies_files_into_an_independent_episode(env: TerminalEnv) -> None:
    env.reset()
    step(env, ("mkdir -p proj && echo v1 > proj/state.txt\n", 3))
    with env.fork() as child:
        r = step(child, ("cat proj/state.txt && echo v2 > proj/state.txt\n", 3))
        assert r.observation == f"{PROMPT} cat proj/state.txt && echo v2 > proj/state.txt\nv1\n{PROMPT}"
        assert child.initial_state == env.initial_state
    assert step(env, ("cat proj/state.txt\n", 3)).observation.split("\n")[1] == "v1"


def test_clear_and_top_keep_their_top_rows(env: TerminalEnv) -> None:
    """Programs that clear the screen or draw from its top are observed whole, even when
    the command line was well down the screen."""
    env.reset()
    step(env, ("for i in 1 2 3 4 5 6; do echo line$i; done\n", 5))
    r = step(env, ("clear; echo hi; echo there\n", 5))
    assert r.observation == f"hi\nthere\n{PROMPT}"
    step(env, ("seq 1 8\n", 5))
    r = step(env, ("clear; echo hi\n", 5))
    assert r.observation == f"hi\n{PROMPT}"
    # Output that only appends is still read from the command line on.
    r = step(env, ("echo after\n", 5))
    assert r.observation == f"{PROMPT} echo after\nafter\n{PROMPT}"
    step(env, ("seq 1 5\n", 5))
    r = step(env, ("top -d 5\n", 1.5))
    rows = r.observation.split("\n")
    assert rows[0].startswith("top - ") and rows[1].startswith("Tasks:"), r.observation[:300]
    assert any(row.lstrip().startswith("PID") for row in rows[:8]) and "still_running" in r.info["events"]
    r = step(env, ("q", 1))
    assert r.info["prompt"] and r.observation.endswith(PROMPT)
    r = step(env, ("top -b -n 1 | head -n 3\n", 10))
    rows = r.observation.split("\n")
    assert rows[0] == f"{PROMPT} top -b -n 1 | head -n 3" and rows[1].startswith("top - ")
    assert rows[2].startswith("Tasks:") and rows[-1] == PROMPT


def test_long_output_keeps_the_command_line_and_says_what_it_left_out(env: TerminalEnv) -> None:
    from agentworld.envs.terminal.env import OMITTED

    env.reset()
    lines = step(env, ("seq 1 300 | tail -n 250\n", 10.0)).observation.split("\n")
    # the command line, the marker, then the last lines through the prompt: 252 lines in 200
    assert len(lines) == env.config.max_lines
    assert lines[0] == f"{PROMPT} seq 1 300 | tail -n 250"
    assert lines[1] == OMITTED.format(n=252 - env.config.max_lines + 1)
    assert lines[2:-1] == [str(i) for i in range(104, 301)] and lines[-1] == PROMPT
    # short output is never touched
    assert step(env, ("seq 1 3\n", 5.0)).observation == f"{PROMPT} seq 1 3\n1\n2\n3\n{PROMPT}"


def test_scrollback_is_as_long_as_configured(env: TerminalEnv) -> None:
    env.reset()
    assert env.pane is not None
    assert env.pane.command("display-message -p -t main '#{history_limit}'") == ["5000"]
