"""Routes out of the terminal sandbox that a client or an episode could take, each tried.

- a reset request asking for capabilities gets none (and the sandbox refuses any
  capability outside the fixed allow-list, whoever asks);
- /dev and /dev/shm are not a RAM disk outside the disk cap;
- only the socket families environments need can be opened (no vsock, packet, ...).
"""

from __future__ import annotations

import asyncio
import platform
from pathlib import Path

import pytest

from agentworld.envs.sandbox import Limits, Sandbox, ensure_rootfs
from agentworld.envs.sandbox.sandbox import USER_ADMIN_CAPABILITIES
from agentworld.envs.terminal import TerminalEnv, action_json
from agentworld.sim.sessions import EnvSessions, SessionError

pytestmark = [pytest.mark.sandbox]
TIGHT = Limits(memory_mb=256, pids=64, disk_mb=64, file_size_mb=200, cpu_seconds=5, output_bytes=100_000)
NO_CAPS = "CapEff:\t0000000000000000"


@pytest.fixture(scope="module")
def rootfs() -> Path:
    return ensure_rootfs()


def _run(env: TerminalEnv, line: str, duration: float = 10.0) -> str:
    return env.step(action_json((line + "\n", duration))).observation


def test_reset_options_cannot_grant_capabilities(rootfs: Path) -> None:
    asked = {"name": "x", "description": "d", "capabilities": ["CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_NET_RAW",
                                                                 "CAP_BPF", "CAP_PERFMON"]}
    with TerminalEnv(limits=TIGHT, rootfs=rootfs) as env:
        with pytest.raises(ValueError, match="privileges come from the shipped templates"):
            env.reset(options={"task": asked})
        assert env.sandbox is None  # refused before any sandbox existed
        # Even the allow-listed set is not for a request to grant: it comes with a template.
        with pytest.raises(ValueError, match="not accepted from a request"):
            env.reset(options={"task": {**asked, "capabilities": list(USER_ADMIN_CAPABILITIES)}})
        env.reset(options={"task": {"name": "x", "description": "d", "setup": "true"}})
        assert "CapEff: 0000000000000000" in " ".join(_run(env, "grep CapEff /proc/self/status").split())


def test_a_served_env_refuses_capabilities_in_reset_options(rootfs: Path) -> None:
    """The same request through the session manager `env serve` runs: a clean refusal."""
    sessions = EnvSessions(lambda _sid: TerminalEnv(limits=TIGHT, rootfs=rootfs), env_id="terminal-v1")

    async def go() -> None:
        with pytest.raises(SessionError, match="privileges"):
            await sessions.reset(options={"task": {"name": "x", "description": "d", "capabilities": ["CAP_SYS_ADMIN"]}})
        assert not sessions.sessions  # the refused reset left no session open

    asyncio.run(go())


def test_sandbox_refuses_capabilities_outside_the_allow_list(rootfs: Path) -> None:
    with pytest.raises(ValueError, match="CAP_SYS_ADMIN"):
        Sandbox(rootfs=rootfs, capabilities=("CAP_CHOWN", "CAP_SYS_ADMIN"))
    with Sandbox(rootfs=rootfs, limits=TIGHT, capabilities=USER_ADMIN_CAPABILITIES) as sb:
        caps = sb.run("grep CapEff /proc/self/status").stdout
        assert NO_CAPS not in caps
        # CAP_SYS_ADMIN is bit 21, CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_BPF 39, CAP_PERFMON 38.
        eff = int(caps.split()[1], 16)
        assert not eff & (1 << 21 | 1 << 12 | 1 << 13 | 1 << 39 | 1 << 38), hex(eff)


def test_dev_shm_counts_against_the_disk_cap(rootfs: Path) -> None:
    with Sandbox(rootfs=rootfs, limits=TIGHT) as sb:
        r = sb.run("head -c 150M /dev/zero > /dev/shm/fill; echo rc=$?; du -sm /dev/shm | cut -f1", timeout=60)
        assert "No space left on device" in r.stderr, r
        assert int(r.stdout.split()[-1]) <= TIGHT.disk_mb, r.stdout
        usage = sb.usage()
        assert usage.disk_full and usage.disk_used_mb >= TIGHT.disk_mb - 2, usage
        # A stale shm file is the sandbox's own business: deleting it frees the space again.
        assert sb.run("rm /dev/shm/fill && touch /dev/shm/ok && ls /dev/shm").stdout.split() == ["ok"]
        assert not sb.usage().disk_full


def test_dev_itself_is_read_only(rootfs: Path) -> None:
    with Sandbox(rootfs=rootfs, limits=TIGHT) as sb:
        r = sb.run("head -c 10M /dev/zero > /dev/fill; echo rc=$?; mkdir /dev/d; echo > /dev/null && echo null-ok")
        assert "Read-only file system" in r.stderr and "rc=1" in r.stdout and "null-ok" in r.stdout, r


def test_a_session_reports_disk_full_from_dev_shm(rootfs: Path) -> None:
    with TerminalEnv(limits=TIGHT, rootfs=rootfs) as env:
        env.reset()
        step = env.step(action_json(("head -c 100M /dev/zero > /dev/shm/x\n", 15.0)))
        assert "No space left on device" in step.observation
        assert "disk_full" in step.info["events"], step.info


_SOCKET_PROBE = r"""python3 - <<'EOF'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SOCK_STREAM, SOCK_DGRAM = 1, 2
# family -> type; high bits above the int must not smuggle a refused family through
probes = {1: SOCK_STREAM, 2: SOCK_STREAM, 10: SOCK_DGRAM, 16: 3, 40: SOCK_STREAM, 17: 3, 38: 5, 44: 3,
          31: SOCK_STREAM, 0: SOCK_STREAM, (1 << 32) | 40: SOCK_STREAM}
for fam, kind in probes.items():
    fd = libc.syscall(41, ctypes.c_long(fam), kind, 0)  # socket(2), x86-64 number
    err = ctypes.get_errno()
    print(hex(fam), "open" if fd >= 0 else errno.errorcode.get(err, err))
    if fd >= 0:
        os.close(fd)
pair = (ctypes.c_int * 2)()
print("pair40", libc.syscall(53, 40, SOCK_STREAM, 0, pair) >= 0)  # socketpair(2)
EOF"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="probe uses x86-64 system call numbers")
def test_only_needed_socket_families_open(rootfs: Path) -> None:
    with Sandbox(rootfs=rootfs, limits=TIGHT) as sb:
        out = dict(line.split() for line in sb.run(_SOCKET_PROBE).stdout.splitlines())
    for fam in ("0x1", "0x2", "0xa", "0x10"):  # unix, inet, inet6, netlink
        assert out[fam] == "open", out
    # vsock, packet, alg, xdp, bluetooth, AF_UNSPEC and a vsock with high bits set
    for fam in ("0x28", "0x11", "0x26", "0x2c", "0x1f", "0x0", "0x100000028"):
        assert out[fam] == "EAFNOSUPPORT", out
    assert out["pair40"] == "False"


_FAKE_PYTHON = "#!/bin/sh\necho 'Python 3.99 RT-CANARY-TOOLS'\n"


def test_a_request_cannot_poison_the_shared_tool_versions(rootfs: Path) -> None:
    """The tool-version cache every later episode shows is filled from a sandbox that
    nothing of a request (its files, its setup script) has touched."""
    from agentworld.envs.terminal.env import tool_versions

    with TerminalEnv(limits=TIGHT, rootfs=rootfs) as env:
        env.reset()
        cached = env.sandbox.rootfs.parent / f"{env.sandbox.rootfs.name}.tools.txt"  # type: ignore[union-attr]
        cached.unlink(missing_ok=True)  # as on the first reset after a root filesystem build
        plant = "cp /usr/local/bin/gcc /usr/local/bin/python3"  # the setup script plants one, the files another
        env.reset(options={"task": {"name": "x", "description": "d", "setup": plant,
                                    "files": {"/usr/local/bin/gcc": _FAKE_PYTHON}, "modes": {"/usr/local/bin/gcc": 0o755}}})
        assert "RT-CANARY" in _run(env, "python3 --version; gcc")  # the episode itself sees its own files
        assert "RT-CANARY" not in cached.read_text() and "RT-CANARY" not in env.initial_state
        env.reset()
        assert "RT-CANARY" not in env.initial_state and cached.read_text() == tool_versions(env.sandbox)  # type: ignore[arg-type]


def test_a_key_name_with_a_line_break_is_typed_not_sent_as_a_key(rootfs: Path) -> None:
    """"C-c\\n" once went to tmux as one key name holding a line break, which split the
    control command and ended the episode as terminal_lost."""
    from agentworld.domains.terminal.keys import parse_action

    [batch] = parse_action('[{"keystrokes": "C-c\\n", "duration": 1}]')
    assert not batch.is_key and not any("\n" in c for c in batch.tmux_commands())
    with TerminalEnv(limits=TIGHT, rootfs=rootfs) as env:
        env.reset()
        step = env.step(action_json(("C-c\n", 2.0)))
        assert "truncated_reason" not in step.info, step.info
        assert "ok-after" in _run(env, "echo ok-after")
        with pytest.raises(ValueError, match="line break"):
            env.pane.command("display-message -p x\nkill-server")  # type: ignore[union-attr]
        assert "still-alive" in _run(env, "echo still-alive")
