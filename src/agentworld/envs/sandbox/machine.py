"""The one machine every sandbox presents, whatever host it runs on.

Recorded trajectories are ground truth, so what a sandbox says about its hardware and
kernel must be the same on every recording host. A :class:`Machine` is that declaration:
a fixed kernel string, the CPU count and memory of the sandbox's own limits, and an idle
system up for an hour. :func:`write_files` renders it as static files that the sandbox
binds read-only over the host's (like LXCFS, but frozen): the ``/proc`` entries that
``free``, ``top``, ``uptime``, ``nproc --all`` and friends read, and a ``uname`` program,
because the uname(2) syscall itself answers with the host kernel and a user namespace
cannot change that. The CPU count that ``nproc`` prints comes from the CPU affinity the
sandbox sets (:func:`pick_cpus`).

What stays the host's: uname(2) called directly (Python's ``os.uname()``, ``platform``)
and the ``cpuid`` instruction. What differs from run to run: pids, mount ids, the host
CPU numbers in affinity masks, and process start times (counted from the sandbox's own
start, against an uptime that does not move). docs/security.md has the whole list.
"""

from __future__ import annotations

import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from agentworld.envs.sandbox.limits import Limits

UPTIME_S = 3600.0
"""How long the declared machine has been up. The sandbox's boot clock starts at 0 when
it is made (a time namespace), so an hour keeps every process's start time before "now"
(``ps`` would print nonsense otherwise) for an hour-long episode."""
BOOT_TIME = 1_704_067_200
"""``btime`` of /proc/stat: 2024-01-01 00:00:00 UTC."""
_TICKS = 100  # USER_HZ
FIXED_MTIME = BOOT_TIME
"""Date of the files the sandbox makes for itself, so `ls -l` reads the same everywhere."""


@dataclass(frozen=True)
class Machine:
    """What a sandbox says it is: ``uname``, ``/proc/cpuinfo``, ``/proc/meminfo``..."""

    cpus: int = 1
    memory_mb: int = 2048
    kernel_release: str = "6.1.0-agentworld"
    kernel_version: str = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.0-agentworld (2024-01-01)"
    machine: str = "x86_64"
    """The hardware name ``uname -m`` prints. The root filesystem is built for the host's
    architecture, so recordings assume an x86_64 host."""
    cpu_model: str = "Virtual CPU @ 2.00GHz"

    def __post_init__(self) -> None:
        if self.cpus < 1 or self.memory_mb < 16:
            raise ValueError(f"a machine needs at least one CPU and 16 MiB (got {self.cpus}, {self.memory_mb})")

    @classmethod
    def for_limits(cls, limits: Limits) -> Machine:
        """The machine a sandbox with ``limits`` shows: its CPU share rounded up, its memory."""
        return cls(cpus=max(1, math.ceil(limits.cpus)), memory_mb=limits.memory_mb)

    def files(self) -> dict[str, str]:
        """Guest path -> content of every file that declares this machine."""
        return {
            "/proc/version": f"Linux version {self.kernel_release} (debian-kernel@lists.debian.org) "
                             f"(gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) "
                             f"{self.kernel_version}\n",
            "/proc/sys/kernel/osrelease": f"{self.kernel_release}\n",
            "/proc/sys/kernel/version": f"{self.kernel_version}\n",
            "/proc/cpuinfo": self._cpuinfo(),
            "/proc/meminfo": self._meminfo(),
            "/proc/stat": self._stat(),
            "/proc/loadavg": "0.00 0.00 0.00 1/64 1\n",
            "/proc/uptime": f"{UPTIME_S:.2f} {self._idle_ticks() * self.cpus / _TICKS:.2f}\n",
            "/usr/bin/uname": _UNAME.replace("@RELEASE@", self.kernel_release)
                                    .replace("@VERSION@", self.kernel_version).replace("@MACHINE@", self.machine),
        }

    def _idle_ticks(self) -> int:
        """Per CPU: 99% of the uptime idle."""
        return int(UPTIME_S * _TICKS) * 99 // 100

    def _cpuinfo(self) -> str:
        blocks = []
        for i in range(self.cpus):
            blocks.append(
                f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
                f"model name\t: {self.cpu_model}\nstepping\t: 7\nmicrocode\t: 0x1\ncpu MHz\t\t: 2000.000\n"
                f"cache size\t: 16384 KB\nphysical id\t: 0\nsiblings\t: {self.cpus}\ncore id\t\t: {i}\n"
                f"cpu cores\t: {self.cpus}\napicid\t\t: {i}\ninitial apicid\t: {i}\nfpu\t\t: yes\n"
                f"fpu_exception\t: yes\ncpuid level\t: 13\nwp\t\t: yes\nflags\t\t: {_CPU_FLAGS}\n"
                f"bugs\t\t:\nbogomips\t: 4000.00\nclflush size\t: 64\ncache_alignment\t: 64\n"
                f"address sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n")
        return "".join(blocks)

    def _meminfo(self) -> str:
        total = self.memory_mb * 1024
        # A quiet machine: a little used, a little cached, no swap.
        used, buffers, cached, sreclaim, shmem = total // 40, total // 256, total // 20, total // 64, total // 512
        free = total - used - buffers - cached - sreclaim
        fields = {
            "MemTotal": total, "MemFree": free, "MemAvailable": free + buffers + cached + sreclaim - shmem,
            "Buffers": buffers, "Cached": cached, "SwapCached": 0,
            "Active": cached // 2 + used // 4, "Inactive": cached // 2 + used * 3 // 4,
            "Active(anon)": used // 4, "Inactive(anon)": used * 3 // 4,
            "Active(file)": cached // 2, "Inactive(file)": cached // 2,
            "Unevictable": 0, "Mlocked": 0, "SwapTotal": 0, "SwapFree": 0, "Zswap": 0, "Zswapped": 0,
            "Dirty": 0, "Writeback": 0, "AnonPages": used, "Mapped": cached // 4, "Shmem": shmem,
            "KReclaimable": sreclaim, "Slab": sreclaim + sreclaim // 8, "SReclaimable": sreclaim,
            "SUnreclaim": sreclaim // 8, "KernelStack": 2048, "PageTables": 4096, "SecPageTables": 0,
            "NFS_Unstable": 0, "Bounce": 0, "WritebackTmp": 0, "CommitLimit": total // 2,
            "Committed_AS": used * 2, "VmallocTotal": 34359738367, "VmallocUsed": 16384,
            "VmallocChunk": 0, "Percpu": 1024 * self.cpus, "HardwareCorrupted": 0, "AnonHugePages": 0,
            "ShmemHugePages": 0, "ShmemPmdMapped": 0, "FileHugePages": 0, "FilePmdMapped": 0,
        }
        lines = [f"{f'{k}:':<16}{v:>8} kB" for k, v in fields.items()]
        lines += [f"{f'{k}:':<16}{0:>8}" for k in ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd",
                                                    "HugePages_Surp")]
        lines += [f"{'Hugepagesize:':<16}{2048:>8} kB", f"{'Hugetlb:':<16}{0:>8} kB"]
        return "\n".join(lines) + "\n"

    def _stat(self) -> str:
        up = int(UPTIME_S * _TICKS)
        idle = self._idle_ticks()
        user, system = (up - idle) * 3 // 5, (up - idle) - (up - idle) * 3 // 5

        def row(name: str, n: int) -> str:
            return f"{name} {user * n} 0 {system * n} {idle * n} 0 0 0 0 0 0\n"

        return (row("cpu ", self.cpus) + "".join(row(f"cpu{i}", 1) for i in range(self.cpus))
                + f"intr 0\nctxt 0\nbtime {BOOT_TIME}\nprocesses 64\nprocs_running 1\nprocs_blocked 0\n"
                + "softirq 0 0 0 0 0 0 0 0 0 0 0\n")


def write_files(machine: Machine, folder: Path, owner: int) -> dict[str, Path]:
    """Write ``machine``'s files under ``folder`` (host-only) and return guest path ->
    host file, for read-only binds. ``owner`` is the host uid of root inside the sandbox,
    so the files read as root's there, as the real ones do."""
    folder.mkdir(mode=0o755)
    binds = {}
    for guest, text in machine.files().items():
        host = folder / guest.strip("/").replace("/", "_")
        host.write_text(text)
        os.chown(host, owner, owner)
        host.chmod(0o555 if guest.endswith("/uname") else 0o444)
        os.utime(host, (FIXED_MTIME, FIXED_MTIME))
        binds[guest] = host
    return binds


def pick_cpus(count: int) -> tuple[int, ...] | None:
    """``count`` of this process's CPUs for a sandbox's affinity, so ``nproc`` prints
    ``count``; None when there are no more than that (nothing to narrow).

    The start is random so that many one-CPU sandboxes spread over the host instead of
    all sharing its first CPU. The affinity presents the machine; the cgroup's CPU quota
    is what limits it (a process may widen its own affinity again).
    """
    pool = sorted(os.sched_getaffinity(0))
    if len(pool) <= count:
        return None
    start = secrets.randbelow(len(pool))
    return tuple(sorted(pool[(start + i) % len(pool)] for i in range(count)))


# x86-64-v2 and a little more: what a generic virtual CPU offers, nothing host-specific.
_CPU_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
              "sse sse2 ht syscall nx lm constant_tsc rep_good nopl xtopology cpuid tsc_known_freq pni "
              "pclmulqdq ssse3 cx16 sse4_1 sse4_2 x2apic popcnt aes xsave avx hypervisor lahf_lm")

# coreutils 9.1's uname (Debian bookworm's), answering for the declared machine: same
# options, order, messages and exit codes; the node name is the UTS namespace's own.
_UNAME = r"""#!/bin/sh
# uname of the sandbox's declared machine (agentworld); the uname(2) syscall is the host's.
s=Linux r='@RELEASE@' v='@VERSION@' m='@MACHINE@' p=unknown i=unknown o=GNU/Linux
read -r n < /proc/sys/kernel/hostname
case "${LC_ALL:-${LC_CTYPE:-$LANG}}" in
  *UTF-8*|*utf-8*|*UTF8*|*utf8*) lq='‘' rq='’' ;;
  *) lq="'" rq="'" ;;
esac
fail() { printf 'uname: %s\n' "$1" >&2; echo "Try 'uname --help' for more information." >&2; exit 1; }
usage() {
  cat <<'EOF'
Usage: uname [OPTION]...
Print certain system information.  With no OPTION, same as -s.

  -a, --all                print all information, in the following order,
                             except omit -p and -i if unknown:
  -s, --kernel-name        print the kernel name
  -n, --nodename           print the network node hostname
  -r, --kernel-release     print the kernel release
  -v, --kernel-version     print the kernel version
  -m, --machine            print the machine hardware name
  -p, --processor          print the processor type (non-portable)
  -i, --hardware-platform  print the hardware platform (non-portable)
  -o, --operating-system   print the operating system
      --help        display this help and exit
      --version     output version information and exit

GNU coreutils online help: <https://www.gnu.org/software/coreutils/>
Report any translation bugs to <https://translationproject.org/team/>
Full documentation <https://www.gnu.org/software/coreutils/uname>
or available locally via: info '(coreutils) uname invocation'
EOF
  exit 0
}
version() {
  cat <<'EOF'
uname (GNU coreutils) 9.1
Copyright (C) 2022 Free Software Foundation, Inc.
License GPLv3+: GNU GPL version 3 or later <https://gnu.org/licenses/gpl.html>.
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.

Written by David MacKenzie.
EOF
  exit 0
}
want='' operand='' ended=''
for a do
  if [ -n "$ended" ]; then operand=${operand:-$a}; continue; fi
  case $a in
    --) ended=1 ;;
    --*)
      name=${a#--}; name=${name%%=*} hit='' all=''
      for l in all kernel-name nodename kernel-release kernel-version machine processor \
               hardware-platform operating-system help version; do
        case $l in "$name") hit=$l all=$l; break ;; "$name"*) hit=$l; all="$all '--$l'" ;; esac
      done
      case $all in
        '') fail "unrecognized option '$a'" ;;
        *"' '"*) fail "option '$a' is ambiguous; possibilities:$all" ;;
      esac
      case $a in *=*) fail "option '--$hit' doesn't allow an argument" ;; esac
      case $hit in
        all) want="${want}a" ;; kernel-name) want="${want}s" ;; nodename) want="${want}n" ;;
        kernel-release) want="${want}r" ;; kernel-version) want="${want}v" ;; machine) want="${want}m" ;;
        processor) want="${want}p" ;; hardware-platform) want="${want}i" ;;
        operating-system) want="${want}o" ;; help) usage ;; version) version ;;
      esac ;;
    -?*)
      flags=${a#-}
      while [ -n "$flags" ]; do
        c=${flags%"${flags#?}"}; flags=${flags#?}
        case $c in [asnrvmpio]) want="$want$c" ;; *) fail "invalid option -- '$c'" ;; esac
      done ;;
    *) operand=${operand:-$a} ;;
  esac
done
[ -z "$operand" ] || fail "extra operand $lq$operand$rq"
case $want in '') want=s ;; *a*) want=snrvmo ;; esac
out=''
for k in s n r v m p i o; do
  case $want in *$k*) eval "out=\"\${out:+\$out }\$$k\"" ;; esac
done
printf '%s\n' "$out"
"""
