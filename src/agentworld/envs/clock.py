"""The clock sandboxed programs see: a declared start instead of the host's clock.

Recorded observations are ground truth, so they must not carry the recording machine's
clock (a time server's answer, a resource stamp, pytest's "passed in 0.37s"): nothing in
a trajectory's context states it, so a world model cannot know it, and a re-recording
differs. Environments therefore start their programs under libfaketime (``LD_PRELOAD``)
with a clock that starts at a declared moment (:data:`DEFAULT_START` unless a task
declares its own) and the initial state says so (:meth:`Clock.describe`). Two kinds,
because libfaketime 0.9.10 (Debian bookworm) cannot serve both needs at once with CPython 3.11:

- **frozen wall clock** (MCP servers: ``tick_s=None, monotonic=False``): every wall-clock
  reading is the declared start; durations and timers follow real time, so a server's
  ``setTimeout`` or ``asyncio.sleep`` waits as long as it asks. Not ticking, because the
  wall clock is also read by libfaketime's own wrapper of every thread wait, so the
  number of readings (and a ticking clock) would depend on thread timing. Caveat:
  Python's ``time.sleep`` fails with EINVAL (libfaketime converts its monotonic deadline
  as if it were faked); the shipped servers do not call it.
- **ticking clock** (SWE: ``tick_s=TICK_S, monotonic=True``, since pytest measures its
  run on the monotonic clock): both clocks start at the declared moment and advance by
  ``tick_s`` each time a program reads them (libfaketime's ``i`` mode), not with real
  time, so single-threaded runs print the same durations every time. Caveat: a wait
  that only ends by timing out (``threading.Event().wait(1)``, ``queue.get(timeout=1)``,
  ``asyncio.sleep``, ``subprocess.run(timeout=...)``) ends late or never, since the clock
  moves only when read (sleeping with ``time.sleep`` or ``sleep 1`` works). The tick
  counter lives in ``/dev/shm``, shared by every process that names it in
  ``FAKETIME_SHARED`` (see :data:`SHARED_COUNTER_ENV`); without it libfaketime silently
  falls back to the real clock.

A task that needs the real clock opts in with ``clock="real"`` (see each environment).
File times are left as the file system has them (``NO_FAKE_STAT``): libfaketime would
shift them by the real start time of each process.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_START = "2026-01-15T09:30:00Z"
"""The declared start: after the fixed commit dates of the MCP and SWE repositories."""
REAL = "real"
"""The option value that opts a task into the host's real clock."""
TICK_S = 0.00001
"""How far a ticking clock moves per reading (10 µs: about a thousand readings start a Python)."""
# The multi-threaded build: Node servers and threaded test suites read the clock from
# several threads, and this one serialises libfaketime's own state.
_LIBRARY = "libfaketimeMT.so.1"
_LIBRARY_GLOBS = (f"usr/lib/*/faketime/{_LIBRARY}", f"usr/lib*/faketime/{_LIBRARY}")
INSTALL_HINT = "install libfaketime (Debian: apt-get install libfaketime; scripts/setup.sh does)"


@dataclass(frozen=True)
class Clock:
    """What time an environment's programs see."""

    start: datetime | None
    """The declared start (aware, UTC), or None for the host's real clock."""
    tick_s: float | None = None
    """Seconds the clock advances per reading; None: the wall clock stays at ``start``."""
    monotonic: bool = False
    """Declare the monotonic clock (durations) too, not only wall-clock time."""

    @classmethod
    def of(cls, value: str | None = None, *, tick_s: float | None = None, monotonic: bool = False) -> Clock:
        """A clock from an option: None (the default start), ``"real"`` or an ISO 8601 time with a zone."""
        if value == REAL:
            return cls(None, tick_s, monotonic)
        text = DEFAULT_START if value is None else value
        try:
            start = datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) else None
        except ValueError:
            start = None
        if start is None or start.tzinfo is None:
            raise ValueError(f"clock must be {REAL!r} or an ISO 8601 time with a zone, like {DEFAULT_START!r}; "
                             f"got {value!r}")
        if monotonic and tick_s is None:
            raise ValueError("a declared monotonic clock must tick: a frozen one stops every timer")
        return cls(start.astimezone(UTC), tick_s, monotonic)

    @property
    def real(self) -> bool:
        return self.start is None

    @property
    def option(self) -> str:
        """The option value that makes this clock again (recorded with the episode)."""
        return REAL if self.start is None else self.start.strftime("%Y-%m-%dT%H:%M:%SZ")

    def env(self, library: str) -> dict[str, str]:
        """Environment variables that give a process this clock (``library``: libfaketime's path there)."""
        if self.start is None:
            return {}
        epoch = int(self.start.timestamp())
        env = {
            "LD_PRELOAD": library,
            # Epoch seconds, so the start does not depend on the process's time zone.
            "FAKETIME_FMT": "%s",
            "FAKETIME": f"{epoch}" if self.tick_s is None else f"@{epoch} i{self.tick_s:.9f}",
            "NO_FAKE_STAT": "1",
        }
        if not self.monotonic:
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        return env

    def describe(self, who: str) -> str:
        """One sentence for an initial state: ``who`` is whose clock it is ("The sandbox's")."""
        if self.start is None:
            return f"{who} clock is the recording machine's real clock."
        if self.tick_s is None:
            return (f"{who} wall clock reads {self.option} throughout the episode; durations and timers "
                    f"follow real time.")
        what = "clock (durations included)" if self.monotonic else "wall clock"
        return (f"{who} {what} starts at {self.option} and advances {self.tick_s * 1e6:g} microseconds "
                f"each time a program reads it, not with real time.")


# One tick counter for every process of a sandbox (libfaketime's ``FAKETIME_SHARED``: a
# semaphore and a shared-memory word). libfaketime makes a counter per process tree, named
# by the first process's pid, and removes it when that process exits -- unless it
# ``exec``s, which leaves it behind. In a sandbox where every command is PID 1 of its own
# namespace, the next command could then not make its own (the name is taken) and would
# silently read the real clock. So every command names one counter, the one a PID 1 makes:
# whichever command finds it missing makes exactly that one.
_COUNTER = ("faketime_sem_1", "faketime_shm_1")
SHARED_COUNTER_ENV = {"FAKETIME_SHARED": f"/{_COUNTER[0]} /{_COUNTER[1]}"}
SHARED_COUNTER_FILES = (f"/dev/shm/sem.{_COUNTER[0]}", f"/dev/shm/{_COUNTER[1]}")
"""Where the counter lives (glibc keeps a named semaphore in ``/dev/shm/sem.<name>``)."""


def find_library(root: Path = Path("/")) -> str | None:
    """libfaketime's path as seen from inside ``root`` (a system root), or None if it is not installed."""
    for pattern in _LIBRARY_GLOBS:
        for found in sorted(root.glob(pattern)):
            return "/" + found.relative_to(root).as_posix()
    return None
