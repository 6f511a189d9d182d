"""The declared machine: a real sandbox shows its own kernel, CPUs, memory, load and
uptime, the same on every host, and no host value (kernel, memory, CPU count, paths)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agentworld.envs.sandbox import Limits, Machine, Sandbox, ensure_rootfs
from agentworld.envs.sandbox.machine import UPTIME_S
from agentworld.envs.sandbox.rootfs import cache_root

pytestmark = pytest.mark.sandbox
DECLARED = Machine()
COMMANDS = ("uname -a", "uname -r", "cat /proc/version", "nproc", "free -m", "head /proc/meminfo",
            "cat /proc/cpuinfo | grep -c processor", "cat /proc/loadavg", "cat /proc/uptime", "cat /proc/mounts",
            "top -bn1 | head -5", "df -h", "ls -l /dev")


@pytest.fixture(scope="module")
def rootfs() -> Path:
    return ensure_rootfs()


def _outputs(sb: Sandbox) -> dict[str, str]:
    out = {}
    for cmd in COMMANDS:
        r = sb.run(cmd)
        assert r.ok, (cmd, r.stderr)
        out[cmd] = r.stdout
    return out


def _host_mem_total_kb() -> int:
    line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal:"))
    return int(line.split()[1])


def _host_values(sb: Sandbox) -> list[str]:
    """Strings that, seen inside, would mean the host showed through."""
    kb = _host_mem_total_kb()
    # The host's devtmpfs is sized by its memory (half of it, by default).
    devtmpfs = re.findall(r"^devtmpfs \S+ devtmpfs \S*size=(\d+k)", Path("/proc/mounts").read_text(), re.M)
    return [*devtmpfs, "devtmpfs", os.uname().release, str(kb), str(kb // 1024), f"{kb / 1024:.1f}", str(sb.rootfs), str(cache_root()), str(sb.dir), str(Path.home() / ".cache"), "aw-sandbox-"]


def test_the_sandbox_shows_the_declared_machine_and_no_host_value(rootfs: Path) -> None:
    with Sandbox(rootfs=rootfs) as sb:
        out = _outputs(sb)
        host = _host_values(sb)
    r, v = DECLARED.kernel_release, DECLARED.kernel_version
    assert out["uname -a"] == f"Linux sandbox {r} {v} x86_64 GNU/Linux\n"
    assert out["uname -r"] == f"{r}\n"
    assert out["cat /proc/version"].startswith(f"Linux version {r} ") and v in out["cat /proc/version"]
    assert out["nproc"] == "1\n" and out["cat /proc/cpuinfo | grep -c processor"] == "1\n"
    assert out["free -m"].splitlines()[1].split()[:2] == ["Mem:", "2048"]
    assert out["head /proc/meminfo"].startswith("MemTotal:        2097152 kB\n")
    assert out["cat /proc/loadavg"].startswith("0.00 0.00 0.00 ")
    assert out["cat /proc/uptime"].split()[0] == f"{UPTIME_S:.2f}"
    df = [(row.split()[0], row.split()[1], row.split()[-1]) for row in out["df -h"].splitlines()[1:]]
    assert df == [("overlay", "512M", "/"), ("tmpfs", "64K", "/dev"), ("tmpfs", "512M", "/dev/shm")]  # disk_mb
    top = out["top -bn1 | head -5"]
    assert "up  1:00" in top and "load average: 0.00, 0.00, 0.00" in top and "2048.0 total" in top
    assert re.search(r"^overlay / overlay \S*lowerdir=lower,upperdir=layer/upper,workdir=layer/work", out["cat /proc/mounts"])
    for cmd, text in out.items():
        for value in host:
            assert value not in text, f"`{cmd}` shows the host's {value!r}:\n{text}"
    host_cpus = len(os.sched_getaffinity(0))
    if host_cpus != 1:  # nothing to tell apart on a one-CPU host
        assert out["nproc"] != f"{host_cpus}\n"


def test_two_sandboxes_with_the_same_limits_read_the_same(rootfs: Path) -> None:
    def clockless(out: dict[str, str]) -> dict[str, str]:
        # top's first line starts with the wall clock, the only field that is not declared.
        return {k: re.sub(r"^top - \d\d:\d\d:\d\d", "top - <clock>", v) for k, v in out.items()}

    with Sandbox(rootfs=rootfs) as a, Sandbox(rootfs=rootfs) as b:
        assert a.dir != b.dir  # different host folders, the same machine
        assert clockless(_outputs(a)) == clockless(_outputs(b))


def test_the_machine_follows_the_limits(rootfs: Path) -> None:
    host_cpus = len(os.sched_getaffinity(0))
    with Sandbox(rootfs=rootfs, limits=Limits(cpus=1.5, memory_mb=512)) as sb:
        r = sb.run("grep -c ^processor /proc/cpuinfo; nproc; nproc --all; free -m | awk '/^Mem:/ {print $2}'; "
                   "grep ^cpu /proc/stat | wc -l")
    cpuinfo, nproc, nproc_all, mem, stat_rows = r.stdout.split()
    assert cpuinfo == nproc_all == "2" and stat_rows == "3" and mem == "512"  # 1.5 CPUs round up
    assert nproc == str(min(2, host_cpus))  # affinity can narrow, not add CPUs


def test_uname_answers_every_option_as_coreutils_does(rootfs: Path) -> None:
    m = DECLARED
    expect = {"": "Linux", "-s": "Linux", "-n": "box", "-r": m.kernel_release, "-v": m.kernel_version,
              "-m": "x86_64", "-p": "unknown", "-i": "unknown", "-o": "GNU/Linux",
              "-rs": f"Linux {m.kernel_release}", "-m -s": "Linux x86_64", "--kernel-release": m.kernel_release,
              "--mach": "x86_64", "-a -p": f"Linux box {m.kernel_release} {m.kernel_version} x86_64 GNU/Linux",
              "-snrvmpio": f"Linux box {m.kernel_release} {m.kernel_version} x86_64 unknown unknown GNU/Linux"}
    with Sandbox(rootfs=rootfs, hostname="box") as sb:
        for flags, want in expect.items():
            r = sb.run(f"uname {flags}")
            assert (r.exit_code, r.stdout) == (0, f"{want}\n"), flags
        for flags, message in (("-x", "invalid option -- 'x'"), ("foo", "extra operand ‘foo’"),
                               ("--ker", "option '--ker' is ambiguous"), ("--bogus", "unrecognized option '--bogus'")):
            r = sb.run(f"uname {flags}")
            assert r.exit_code == 1 and r.stdout == "" and r.stderr.startswith(f"uname: {message}"), flags
        assert sb.run("uname --version").stdout.startswith("uname (GNU coreutils) 9.1\n")
        assert sb.run("uname --help").stdout.startswith("Usage: uname [OPTION]...\n")
        assert sb.run("cat /proc/sys/kernel/osrelease /proc/sys/kernel/ostype").stdout == f"{m.kernel_release}\nLinux\n"
        assert sb.run("ls -l /usr/bin/uname").stdout.split()[2:4] == ["root", "root"]  # as the real one


def test_process_start_times_are_the_declared_machines(rootfs: Path) -> None:
    """ps reads start times against the declared uptime: they count from the sandbox's own
    boot (a time namespace), not the host's, so elapsed times are never negative."""
    with Sandbox(rootfs=rootfs) as sb:
        if sb.timens is None:
            pytest.skip("this kernel has no time namespaces (Linux 5.6+)")
        r = sb.run("ps -o etimes= -p 1; ps -o lstart= -p 1")
    etimes, lstart = r.stdout.splitlines()
    assert 0 <= int(etimes) <= UPTIME_S
    assert lstart.endswith("2024")  # the declared boot, 2024-01-01


def test_the_terminal_initial_state_declares_the_machine(rootfs: Path) -> None:
    from agentworld.envs.terminal import TerminalEnv

    with TerminalEnv(rootfs=rootfs, limits=Limits(cpus=2, memory_mb=1024)) as env:
        env.reset()
        state = env.initial_state
    assert f"Kernel: Linux {DECLARED.kernel_release} x86_64\n" in state
    assert "Machine: 2 CPU(s), 1024 MiB memory, no swap\n" in state
    assert os.uname().release not in state
