"""Hostile probes inside every MCP server's sandbox, and the real servers' own credentials.

Each probe runs with the confinement the server itself gets (``confined_argv`` of the
server's own spec, only the command swapped), in the server's runtime: Python for the
PyPI servers, Node for the npm ones. Nothing here writes to host kernel state: the sysctl
check only opens the file for writing and closes it.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _procs import descendants, processes, status, tagged

from agentworld.envs._owner import token
from agentworld.envs.mcp import SERVER_NAMES, McpHub, missing_servers, server_spec
from agentworld.envs.mcp.servers import SERVER_UID, ServerSpec, confined_argv, hand_over, npm_dir, server_env

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[1]

PY_PROBE = r"""
import ctypes, json, os, socket, subprocess, sys
args = json.loads(sys.argv[1])
st = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())

def try_open(path, flags):
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        return e.errno
    os.close(fd)
    return 0

libc = ctypes.CDLL(None, use_errno=True)
remount = {}
for target in args["mounts"]:  # MS_REMOUNT | MS_BIND without MS_RDONLY: "remount,rw"
    rc = libc.mount(None, target.encode(), None, ctypes.c_ulong(32 | 4096), None)
    remount[target] = ctypes.get_errno() if rc else 0
tmpfs = ctypes.get_errno() if libc.mount(b"none", b"/tmp", b"tmpfs", ctypes.c_ulong(0), None) else 0
created = {}
for d in args["dirs"]:
    p = os.path.join(d, ".aw-probe")
    created[d] = try_open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    if created[d] == 0:
        os.unlink(p)
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", args["port"])); net = 0
except OSError as e:
    net = e.errno or -1
print(json.dumps({
    "uid": st["Uid"].split()[0], "cap_eff": st["CapEff"].strip(), "cap_bnd": st["CapBnd"].strip(),
    "seccomp": st["Seccomp"].strip(), "no_new_privs": st["NoNewPrivs"].strip(),
    "sysctl": try_open("/proc/sys/kernel/core_pattern", os.O_WRONLY),
    "remount": remount, "mount_tmpfs": tmpfs,
    "mount_cmd": subprocess.run(["mount", "-o", "remount,rw", "/"], capture_output=True).returncode,
    "visible": [p for p in args["markers"] if os.path.lexists(p)],
    "created": created, "net": net,
    "workspace": try_open("/workspace/probe-ok", os.O_WRONLY | os.O_CREAT),
}))
"""

# The same report from Node (no raw mount(2) there: the mount command stands in for it).
JS_PROBE = r"""
const fs = require("fs"), net = require("net"), cp = require("child_process");
const args = JSON.parse(process.argv[1]);
const st = Object.fromEntries(fs.readFileSync("/proc/self/status", "utf8").trim().split("\n")
  .map(l => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]));
const C = fs.constants;
function tryOpen(p, flags) {
  try { fs.closeSync(fs.openSync(p, flags, 0o600)); return 0; }
  catch (e) { return -e.errno; }
}
const created = {};
for (const d of args.dirs) {
  const p = d.replace(/\/$/, "") + "/.aw-probe";
  created[d] = tryOpen(p, C.O_WRONLY | C.O_CREAT | C.O_EXCL);
  if (created[d] === 0) fs.unlinkSync(p);
}
const remount = {};
for (const t of args.mounts) remount[t] = cp.spawnSync("mount", ["-o", "remount,rw", t]).status;
const sock = net.connect({host: "127.0.0.1", port: args.port});
const finish = (code) => {
  sock.destroy();
  console.log(JSON.stringify({
    uid: st.Uid.split(/\s+/)[0], cap_eff: st.CapEff, cap_bnd: st.CapBnd, seccomp: st.Seccomp,
    no_new_privs: st.NoNewPrivs, sysctl: tryOpen("/proc/sys/kernel/core_pattern", C.O_WRONLY),
    remount, mount_tmpfs: cp.spawnSync("mount", ["-t", "tmpfs", "none", "/tmp"]).status,
    mount_cmd: cp.spawnSync("mount", ["-o", "remount,rw", "/"]).status,
    visible: args.markers.filter(p => { try { fs.lstatSync(p); return true; } catch { return false; } }),
    created, net: code, workspace: tryOpen("/workspace/probe-ok", C.O_WRONLY | C.O_CREAT),
  }));
};
sock.setTimeout(2000, () => finish(-110));
sock.on("connect", () => finish(0));
sock.on("error", (e) => finish(e.code || "error"));
"""


@pytest.fixture(scope="module", autouse=True)
def _servers_installed() -> None:
    problems = missing_servers()
    assert not problems, "MCP servers missing (run scripts/setup.sh):\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def host_markers() -> Iterator[list[str]]:
    """Files on the host that no sandbox may see: in a host temporary folder, in /root, in /work."""
    tmp_dir = Path(tempfile.mkdtemp(prefix="aw-probe-marker-"))
    (tmp_dir / "marker").write_text("host")
    fd, root_marker = tempfile.mkstemp(prefix=".aw-probe-marker-", dir="/root")
    os.close(fd)
    try:
        yield [str(tmp_dir / "marker"), str(tmp_dir), root_marker, str(REPO / "pyproject.toml"), str(Path(__file__)),
               "/work", "/home", "/var", "/run", "/etc/shadow", "/etc/ssl/private", "/root/.cache/agentworld/seccomp",
               "/sys/fs/cgroup"]
    finally:
        os.unlink(root_marker)
        (tmp_dir / "marker").unlink()
        tmp_dir.rmdir()


def _readonly_dirs(spec: ServerSpec) -> list[str]:
    dirs = ["/", "/etc", "/usr", "/usr/lib", "/usr/bin", "/root", "/dev", "/dev/shm", "/opt", "/proc", "/proc/sys/kernel"]
    if spec.npm_package:
        dirs.append(str(npm_dir()))
    else:
        dirs += [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable)]
    dirs += [os.path.dirname(dest) for _, dest in spec.binds]
    return dirs


def _not_needed(spec: ServerSpec) -> list[str]:
    """Runtimes the server does not use stay out of its sandbox."""
    out = [] if "python" in spec.runtimes else [sys.prefix]
    return out if spec.npm_package else [*out, str(npm_dir())]


def _probe(name: str, ws: Path, markers: list[str], port: int) -> dict:
    spec = server_spec(name)
    markers = markers + _not_needed(spec)
    args = json.dumps({"markers": markers, "dirs": _readonly_dirs(spec), "port": port,
                       "mounts": ["/", "/usr", "/etc", "/workspace", "/proc/sys"]})
    argv = ("node", "-e", JS_PROBE, args) if spec.npm_package else ("python3", "-c", PY_PROBE, args)
    probe = dataclasses.replace(spec, argv=argv)  # the server's own confinement, another command
    res = subprocess.run(confined_argv(probe, ws), env=server_env(probe), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("name", SERVER_NAMES)
def test_probe_in_each_server_sandbox_is_contained(name: str, tmp_path: Path, host_markers: list[str],
                                                    host_http_port: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    hand_over(ws)
    report = _probe(name, ws, host_markers, host_http_port)
    assert report["uid"] == str(SERVER_UID)
    assert int(report["cap_eff"], 16) == 0 and int(report["cap_bnd"], 16) == 0
    assert report["seccomp"] == "2" and report["no_new_privs"] == "1"
    assert abs(report["sysctl"]) in (errno.EACCES, errno.EROFS, errno.EPERM), report["sysctl"]
    # Every remount attempt fails (Python: the raw syscall, EPERM from seccomp; Node: mount(8)).
    assert all(rc != 0 for rc in report["remount"].values()), report["remount"]
    assert report["mount_tmpfs"] != 0 and report["mount_cmd"] != 0
    assert report["visible"] == []
    assert {d: rc for d, rc in report["created"].items() if rc == 0} == {}
    assert report["net"] != 0  # the host's loopback is another network namespace
    assert report["workspace"] == 0 and (ws / "probe-ok").exists()  # the workspace is writable
    assert (ws / "probe-ok").stat().st_uid == SERVER_UID


def test_sandbox_tmp_is_private_and_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    hand_over(ws)
    name = f"aw-probe-{os.getpid()}"
    script = (f"import os; open('/tmp/{name}', 'w').write('x'); "
              "st = os.statvfs('/tmp'); print(st.f_blocks * st.f_frsize)")
    probe = dataclasses.replace(server_spec("time"), argv=("python3", "-c", script))
    res = subprocess.run(confined_argv(probe, ws), env=server_env(probe), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert int(res.stdout) <= 64 * 2**20
    assert not (Path(tempfile.gettempdir()) / name).exists()


def test_launch_leaves_no_mount_on_the_host(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    hand_over(ws)
    before = Path("/proc/self/mountinfo").read_text()
    probe = dataclasses.replace(server_spec("time"), argv=("true",))
    res = subprocess.run(confined_argv(probe, ws), env=server_env(probe), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert str(ws) not in Path("/proc/mounts").read_text()
    assert "agentworld-mcp" not in Path("/proc/mounts").read_text()
    assert [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if line not in before] == []


@pytest.mark.slow
def test_running_servers_are_unprivileged_and_confined(tmp_path: Path) -> None:
    """The real servers (not probes): every process of every sandbox, read from the host."""
    ws = tmp_path / "ws"
    for sub in ("files", "site", "repo"):
        (ws / sub).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    with McpHub([server_spec(n) for n in SERVER_NAMES], ws):
        table = processes()
        # bwrap's monitor and its namespace's first process both carry the tag in their environment.
        launchers = {pid for pid in tagged(token()) if table[pid] not in tagged(token())}
        assert len(launchers) == len(SERVER_NAMES)
        inside = descendants(launchers)
        assert len(inside) >= len(SERVER_NAMES)
        commands = set()
        for pid in launchers | inside:
            st = status(pid)
            assert st["Uid"].split() == [str(SERVER_UID)] * 4, pid
            assert st["Gid"].split() == [str(SERVER_UID)] * 4 and st["Groups"] == "", pid
            assert int(st["CapEff"], 16) == 0 and int(st["CapPrm"], 16) == 0, pid
            if pid in inside:
                assert st["Seccomp"] == "2" and st["NoNewPrivs"] == "1", pid
                commands.add(os.path.basename(os.readlink(f"/proc/{pid}/exe")))
                mounts = {line.split()[4] for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()}
                assert not mounts & {"/work", "/home", "/var", "/run", "/sys"}, mounts
        assert {"node", "bwrap"} <= commands and any(c.startswith("python") for c in commands), commands
