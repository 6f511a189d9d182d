"""Hostile commands are contained: each one fails or is stopped inside its sandbox, the
episode reports what happened, the host is unaffected, and the next episode is clean."""

from __future__ import annotations

import hashlib
import os
import platform
import resource
import socket
import subprocess
import time
from pathlib import Path

import pytest

from agentworld.envs import EpisodeOver
from agentworld.envs.sandbox import Limits, Sandbox, ensure_rootfs
from agentworld.envs.sandbox.rootfs import SANDBOX_UID
from agentworld.envs.terminal import TerminalEnv, action_json
from agentworld.envs.terminal.tmux import TITLE_PREFIX

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
PROMPT = "root@sandbox:/workspace#"
TIGHT = Limits(memory_mb=256, pids=64, disk_mb=64, file_size_mb=32, cpu_seconds=3, output_bytes=100_000)


@pytest.fixture(scope="module")
def rootfs() -> Path:
    return ensure_rootfs()


@pytest.fixture
def env(rootfs: Path):
    e = TerminalEnv(limits=TIGHT, rootfs=rootfs)
    e.reset()
    yield e
    last = e.sandbox.dir if e.sandbox else None
    e.close()
    _assert_torn_down(last)


def _assert_torn_down(sandbox_dir: Path | None) -> None:
    """The closed sandbox left no folder, no mount and no cgroup behind."""
    assert sandbox_dir is not None and not sandbox_dir.exists()
    assert str(sandbox_dir) not in Path("/proc/mounts").read_text()


def run(env: TerminalEnv, line: str, duration: float = 5.0):
    return env.step(action_json((line + "\n", duration)))


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _assert_next_episode_clean(env: TerminalEnv) -> None:
    assert env.sandbox is not None and env.sandbox.cgroup is not None
    old_dir, old_cgroup = env.sandbox.dir, env.sandbox.cgroup.dirs
    env.reset()
    _assert_torn_down(old_dir)
    assert not any(d.exists() for d in old_cgroup)
    r = run(env, "ls -A /workspace | wc -l; ps -e --no-headers | wc -l; df --output=used -m / | tail -n 1")
    files, procs, used = r.observation.split("\n")[1:4]
    assert files.strip() == "0" and int(procs) <= 4 and int(used) < 5, r.observation


def test_no_network(env: TerminalEnv) -> None:
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(1)
    port = host.getsockname()[1]
    try:
        r = run(env, f"curl -sS -m 3 http://127.0.0.1:{port}/; curl -sS -m 3 http://1.1.1.1/; "
                     "python3 -c \"import socket; socket.create_connection(('8.8.8.8', 53), 2)\" 2>&1 | tail -n 1", 15)
        assert "Failed to connect to 127.0.0.1" in r.observation  # the host's loopback is not the sandbox's
        assert "Couldn't connect to server" in r.observation
        assert "Network is unreachable" in r.observation
        r = run(env, "getent hosts deb.debian.org || echo no-dns; ip -o link | wc -l")
        assert "no-dns\n1" in r.observation
    finally:
        host.close()
    _assert_next_episode_clean(env)


def test_writes_outside_workspace_never_reach_the_host(env: TerminalEnv, rootfs: Path, tmp_path: Path) -> None:
    before = {p: _sha(p) for p in ("/etc/passwd", "/etc/hostname", str(rootfs / "etc/passwd"))}
    r = run(env, f"echo 'evil:x:0:0::/:/bin/sh' >> /etc/passwd; rm -rf /usr/share/doc; echo x > /usr/bin/newtool; "
                 f"mkdir -p {tmp_path} && echo pwned > {tmp_path}/owned; echo rc=$?; tail -n 1 /etc/passwd")
    assert "rc=0" in r.observation and "evil:x:0:0" in r.observation  # allowed inside its own layer
    assert {p: _sha(p) for p in before} == before
    assert not (tmp_path / "owned").exists() and (rootfs / "usr/share/doc").is_dir()
    r = run(env, "mount -t tmpfs none /mnt; echo h > /proc/sysrq-trigger; ls /sys | wc -l; mknod /tmp/sda b 8 0 && "
                 "head -c 1 /tmp/sda")
    assert "mount: /mnt: permission denied" in r.observation
    assert "/proc/sysrq-trigger: Read-only file system" in r.observation or "sysrq-trigger: No such" in r.observation
    assert "mknod: /tmp/sda: Operation not permitted" in r.observation  # no device nodes in a user namespace
    _assert_next_episode_clean(env)


def test_host_files_are_invisible(env: TerminalEnv, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host-secret-value\n")
    assert Path("/root/.cache/agentworld").exists() and Path("/work").exists()  # both exist on the host
    r = run(env, f"cat {secret}; cat /root/.cache/agentworld 2>&1 | head -n1; grep -rs host-secret-value /proc/*/environ "
                 "/tmp /root /workspace | wc -l; ls /work; cat /proc/1/cmdline | tr '\\0' ' '")
    assert r.observation.count("No such file or directory") == 3, r.observation
    assert "host-secret-value" not in r.observation.replace("grep -rs host-secret-value", "")
    assert "script -q -e -c /bin/bash -i /dev/null" in r.observation  # PID 1 is the sandbox's own
    _assert_next_episode_clean(env)


def test_host_processes_cannot_be_seen_or_killed(env: TerminalEnv) -> None:
    victim = subprocess.Popen(["sleep", "300"])
    try:
        run(env, f"kill -9 {victim.pid} {os.getpid()}; kill -9 -1; sleep 0.5; echo survived")
        time.sleep(0.5)
        assert victim.poll() is None  # the host process lives on
        env.step(action_json(("", 0.5)))
        ps = run(env, "ps -e --no-headers | wc -l")
        assert int(ps.observation.split("\n")[1]) <= 4
    finally:
        victim.kill()
    _assert_next_episode_clean(env)


def test_fork_bomb_hits_the_process_limit_and_ends_the_episode(env: TerminalEnv) -> None:
    steps = [run(env, "bomb() { bomb | bomb & }; bomb", 4)]
    while not steps[-1].truncated and len(steps) < 4:
        steps.append(env.step(action_json(("", 1))))
    assert "process_limit" in steps[0].info["events"] + steps[-1].info["events"]
    assert steps[-1].truncated and steps[-1].info["truncated_reason"] == "process_limit", [s.info for s in steps]
    assert env.sandbox is not None and env.sandbox.usage().pids_denied > 0
    assert env.sandbox.cgroup is not None and env.sandbox.cgroup.pids() == []  # stopped at once
    assert subprocess.run(["true"]).returncode == 0  # the host can still start processes
    _assert_next_episode_clean(env)


def test_memory_exhaustion_is_killed(env: TerminalEnv) -> None:
    r = run(env, "python3 -c \"x = bytearray(1 << 30); print('allocated')\"; echo rc=$?", 20)
    assert "\nallocated" not in r.observation
    assert "Killed" in r.observation and "rc=137" in r.observation
    assert "memory_limit" in r.info["events"] and r.info["prompt"]
    assert run(env, "echo alive").observation.endswith(f"alive\n{PROMPT}")
    _assert_next_episode_clean(env)


def test_disk_filling_stops_at_the_quota(env: TerminalEnv) -> None:
    free_before = os.statvfs("/tmp").f_bavail
    r = run(env, "for i in 1 2 3 4; do head -c 30M /dev/zero > /workspace/fill$i; done; df -m / | tail -n 1", 20)
    assert "No space left on device" in r.observation and "disk_full" in r.info["events"]
    r = run(env, "head -c 40M /dev/zero > /big; echo rc=$?", 10)
    assert "File size limit exceeded" in r.observation or "No space left" in r.observation
    assert os.statvfs("/tmp").f_bavail > free_before - (200 << 20) // os.statvfs("/tmp").f_frsize
    _assert_next_episode_clean(env)


def test_running_forever_is_bounded(env: TerminalEnv, rootfs: Path) -> None:
    t0 = time.monotonic()
    r = run(env, "sleep infinity", 1.0)
    assert time.monotonic() - t0 < 5 and "still_running" in r.info["events"] and not r.info["prompt"]
    r = env.step(action_json(("C-c", 2)))
    assert r.observation.endswith(PROMPT) and r.info["prompt"]
    with Sandbox(rootfs=rootfs, limits=Limits(cpu_seconds=1)) as sb:
        res = sb.run("python3 -c 'while True: pass'; echo rc=$?", timeout=120)  # killed after 1 s of CPU
        assert not res.timed_out and "rc=152" in res.stdout
    with Sandbox(rootfs=rootfs, limits=TIGHT) as sb:
        res = sb.run("sleep 1000 & while :; do sleep 1; done", timeout=1.5)
        assert res.timed_out and sb.cgroup is not None
        deadline = time.monotonic() + 5  # the kernel reaps a dead PID namespace asynchronously
        while sb.cgroup.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sb.cgroup.pids() == []
    _assert_next_episode_clean(env)


def test_printing_gigabytes_is_bounded(env: TerminalEnv, rootfs: Path) -> None:
    t0 = time.monotonic()
    r = run(env, "yes 'flood of output'", 2.0)
    assert time.monotonic() - t0 < 10
    lines = r.observation.split("\n")
    assert len(lines) <= env.config.max_lines and lines[-2] == "flood of output"
    r = env.step(action_json(("C-c", 3)))
    assert r.observation.endswith(PROMPT)
    with Sandbox(rootfs=rootfs, limits=TIGHT) as sb:
        res = sb.run("head -c 4G /dev/zero", timeout=30)
        assert res.truncated and len(res.stdout) == TIGHT.output_bytes and res.duration_s < 10
    _assert_next_episode_clean(env)


# -- the kernel's shared state: user namespace, capabilities, seccomp ---------------

_KERNEL_PROBE = r"""python3 - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def err(rc): return "ok" if rc >= 0 else os.strerror(ctypes.get_errno())
try:  # open for writing only; nothing is ever written
    os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY)); print("sysctl: writable")
except OSError as e: print("sysctl:", e.strerror)
status = dict(l.split(":", 1) for l in open("/proc/self/status"))
print("capeff:", status["CapEff"].strip())
print("seccomp:", status["Seccomp"].strip(), "uid_map:", " ".join(open("/proc/self/uid_map").read().split()))
print("add_key:", err(libc.syscall(248, b"user", b"aw-probe", b"secret", 6, -3)))  # KEY_SPEC_SESSION_KEYRING
print("ptrace:", err(libc.syscall(101, 16, 1, 0, 0)))  # PTRACE_ATTACH to PID 1
mounts = {l.split()[4]: l.split()[5] for l in open("/proc/self/mountinfo")}
print("proc:", " ".join(f"{p}={mounts.get(p, 'absent')[:2]}" for p in ("/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs")))
EOF"""


def _assert_kernel_contained(text: str) -> None:
    assert "sysctl: Permission denied" in text or "sysctl: Read-only file system" in text, text
    assert f"seccomp: 2 uid_map: 0 {SANDBOX_UID} 65536" in text, text
    assert "capeff: 0000000000000000" in text, text  # no capability even inside its own namespace
    assert "add_key: Operation not permitted" in text and "ptrace: Operation not permitted" in text, text
    for knob in ("/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"):  # kernel knobs: read-only or absent
        assert f"{knob}=ro" in text or f"{knob}=ab" in text, text


def _sandbox_pids_are_unprivileged(sb: Sandbox, exclude: set[int]) -> int:
    """Every process of the sandbox runs as the sandbox uid in its own user namespace, so
    the kernel gives it no capability over the host's namespaces. Returns how many."""
    assert sb.cgroup is not None
    host_userns = os.readlink("/proc/self/ns/user")
    checked = 0
    for pid in set(sb.cgroup.pids()) - exclude:
        try:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
            userns = os.readlink(f"/proc/{pid}/ns/user")
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited meanwhile
        if status["Name"].strip() in ("sh", "nsenter") and status["Uid"].split()[1] == "0":
            continue  # the launcher, between joining the cgroup and entering the namespace
        assert status["Uid"].split()[:3] == [str(SANDBOX_UID)] * 3, (pid, status["Name"], status["Uid"])
        assert userns != host_userns, (pid, status["Name"])
        checked += 1
    return checked


@pytest.mark.skipif(platform.machine() != "x86_64", reason="probe uses x86-64 system call numbers")
def test_kernel_state_is_out_of_reach_and_the_episode_survives(env: TerminalEnv) -> None:
    r = run(env, _KERNEL_PROBE, 20)
    _assert_kernel_contained(r.observation)
    assert not r.truncated and r.info["prompt"]
    assert env.sandbox is not None and env.pane is not None
    assert _sandbox_pids_are_unprivileged(env.sandbox, {env.pane.server_pid() or -1}) >= 2  # script + bash
    assert run(env, "echo alive").observation.endswith(f"alive\n{PROMPT}")  # ptrace did not freeze PID 1
    _assert_next_episode_clean(env)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="probe uses x86-64 system call numbers")
def test_user_admin_tasks_hold_capabilities_over_their_own_namespace_only(rootfs: Path) -> None:
    with TerminalEnv(limits=TIGHT, rootfs=rootfs) as e:
        e.reset(seed=3, options={"task": "users-ownership"})
        out = run(e, "useradd -m alice && chown alice /workspace && su alice -c 'id -un' && grep CapEff /proc/self/status",
                  15).observation
        assert "\nalice\n" in out and "CapEff:\t0000000000000000" not in out, out
        text = run(e, _KERNEL_PROBE, 20).observation  # the host stays out of reach all the same
        assert "sysctl: Permission denied" in text or "sysctl: Read-only file system" in text, text
        assert f"uid_map: 0 {SANDBOX_UID} 65536" in text and "ptrace: Operation not permitted" in text, text


@pytest.mark.skipif(platform.machine() != "x86_64", reason="probe uses x86-64 system call numbers")
def test_swe_sandbox_is_equally_contained() -> None:
    from agentworld.envs.swe import SweEnv, tool_call

    with SweEnv() as env:
        env.reset(seed=1, options={"repo": "parse", "bug": False})
        obs = env.step(tool_call("bash", command=_KERNEL_PROBE)).observation
        _assert_kernel_contained(obs)
        obs = env.step(tool_call("bash", command="cd /workspace/parse && git status --short && touch x && echo ok")).observation
        assert obs.startswith("ok\n") and "exit code 0" in obs, obs  # the host-extracted tree is root's inside
        assert env.sandbox is not None
        p = env.sandbox.spawn(["sleep", "30"])
        try:
            deadline = time.monotonic() + 5
            while _sandbox_pids_are_unprivileged(env.sandbox, set()) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _sandbox_pids_are_unprivileged(env.sandbox, set()) >= 1
        finally:
            p.kill()


def test_output_flood_is_paid_by_the_sandbox_cpu(rootfs: Path) -> None:
    """The tmux server drawing a flood lives in the sandbox's cgroup: the flood can use at
    most the sandbox's CPU share, and the host side (this process) next to nothing."""
    cpus, seconds = 0.5, 3.0
    with TerminalEnv(limits=Limits(cpus=cpus, pids=64), rootfs=rootfs) as env:
        env.reset()
        assert env.sandbox is not None and env.sandbox.cgroup is not None and env.pane is not None
        server = env.pane.server_pid()
        assert server in env.sandbox.cgroup.pids()
        cg0, host0, t0 = env.sandbox.cgroup.cpu_seconds(), _own_cpu(), time.monotonic()
        tmux0 = _proc_cpu(server)
        r = run(env, "yes 'flood of output'", seconds)
        wall = time.monotonic() - t0
        cg, host, tmux = env.sandbox.cgroup.cpu_seconds() - cg0, _own_cpu() - host0, _proc_cpu(server) - tmux0
        assert "still_running" in r.info["events"] and tmux > 0.05  # the server did draw the flood
        assert cg <= cpus * wall + 0.25, (cg, wall)  # the CFS quota held, tmux server included
        assert tmux <= cg + 0.05  # ... because the server's CPU is part of the sandbox's
        assert host < 0.5 * seconds, host  # the host side only looked at the pane now and then
        r = env.step(action_json(("C-c", 3)))
        assert r.observation.endswith(PROMPT)


def _own_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _proc_cpu(pid: int | None) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_prompt_marker_cannot_be_forged(env: TerminalEnv) -> None:
    assert env.pane is not None
    old = env.pane.state().title[len(TITLE_PREFIX):]  # the token of the prompt on screen now
    for spoof in (f"printf '\\033]2;{TITLE_PREFIX}{old}\\007'; sleep 3",  # the shell itself, the old token
                  f"python3 -c 'print(\"\\033]2;{TITLE_PREFIX}1\\007\", flush=True)'; sleep 3"):
        r = run(env, spoof, 1.5)
        assert not r.info["prompt"] and "still_running" in r.info["events"], (spoof, r.info)
        r = env.step(action_json(("C-c", 2)))
        assert r.info["prompt"] and r.observation.endswith(PROMPT)


def test_current_prompt_token_printed_by_a_running_command_does_not_end_the_step(env: TerminalEnv) -> None:
    """The token is readable inside (the prompt needs it): a command printing the current
    one with the title escape still runs, and the kernel says the shell is not reading."""
    t0 = time.monotonic()
    r = run(env, f"printf '\\033]2;{TITLE_PREFIX}%s\\007' \"$(cat /run/agentworld/prompt)\"; sleep 20", 2.0)
    assert time.monotonic() - t0 >= 1.9 and not r.info["prompt"] and "still_running" in r.info["events"], r.info
    r = env.step(action_json(("C-c", 2)))
    assert r.info["prompt"] and r.observation.endswith(PROMPT)


def test_current_prompt_token_with_the_terminal_handed_back_to_the_shell_does_not_end_the_step(
        env: TerminalEnv) -> None:
    """A command that also makes the shell's group the terminal's foreground (tcsetpgrp)
    and goes on in the background: the shell still waits for it, not for a key."""
    spoof = ("python3 -c 'import os, sys, time; t = open(\"/run/agentworld/prompt\").read().strip(); "
             f"print(\"\\033]2;{TITLE_PREFIX}\" + t + \"\\007\", end=\"\", flush=True); "
             "os.tcsetpgrp(0, os.getsid(0)); time.sleep(3)'")
    t0 = time.monotonic()
    r = run(env, spoof, 1.5)
    assert time.monotonic() - t0 >= 1.4 and not r.info["prompt"] and "still_running" in r.info["events"], r.info
    r = env.step(action_json(("", 3)))  # the command ends by itself; the real prompt comes back
    assert r.info["prompt"] and r.observation.endswith(PROMPT), (r.observation, r.info)


def test_forged_tmux_control_begin_end_error_lines_do_not_cut_the_screen(rootfs: Path) -> None:
    """Pane output that looks like tmux's control-mode replies (``%begin T N 1``, ``%end
    T N 1``, ``%error T N 1`` with the current time and every plausible number) is shown
    as text: the observation is whole and the shell stays usable."""
    with TerminalEnv(limits=TIGHT, rootfs=rootfs, max_lines=2000) as env:
        env.reset()
        forge = ('for n in $(seq 1 400); do for k in begin end error; do echo "%$k $EPOCHSECONDS $n 1"; done; done; '
                 "echo forged-done")
        r = run(env, forge, 15)
        lines = r.observation.split("\n")
        assert not r.truncated and r.info["prompt"], r.info
        assert lines[0] == f"{PROMPT} {forge}" and lines[-2:] == ["forged-done", PROMPT], lines[-3:]
        body = lines[1:-2]
        assert len(body) == 1200 and all(ln.startswith(("%begin ", "%end ", "%error ")) for ln in body)
        assert [ln.split()[2] for ln in body[::3]] == [str(n) for n in range(1, 401)]
        r = run(env, "seq 1 40 | sed 's/^/%end 0 /'; echo alive $$")  # the screen itself, full of them
        assert not r.truncated and r.info["prompt"] and r.observation.split("\n")[-2].startswith("alive "), r.info


def test_process_name_with_newlines_and_control_markers_does_not_break_the_pane_state(env: TerminalEnv) -> None:
    """tmux reports the foreground process's name, which the process chooses (argv[0]):
    newlines and forged ``%end`` lines in it neither end the reply early nor lose the pane."""
    r = run(env, "bash -c 'exec -a \"$(printf \"x\\n%%end $EPOCHSECONDS 1 1\\n%%begin|1|2\")\" sleep 3'", 1.0)
    assert not r.truncated and "still_running" in r.info["events"], r.info
    assert env.pane is not None and "\n" not in env.pane.state().command
    r = env.step(action_json(("C-c", 2)))
    assert not r.truncated and r.info["prompt"] and r.observation.endswith(PROMPT), r.info


def test_killed_shell_ends_the_episode_with_a_reason(env: TerminalEnv) -> None:
    r = run(env, "kill -9 $$", 5)
    assert r.truncated and r.info["truncated_reason"] == "shell_killed", r.info
    with pytest.raises(EpisodeOver):  # the episode is over until the next reset
        run(env, "echo never")
    _assert_next_episode_clean(env)


def test_episode_wall_clock_limit(rootfs: Path) -> None:
    with TerminalEnv(rootfs=rootfs, episode_seconds=2.0) as env:
        env.reset()
        r = run(env, "echo quick", 5)
        assert not r.truncated
        r = run(env, "sleep 30", 30)  # the step waits only for what is left of the episode
        assert r.truncated and r.info["truncated_reason"] == "episode_time_limit" and r.info["duration_s"] < 10
        with pytest.raises(EpisodeOver):
            run(env, "echo late")
