"""How OpenMP threads (torch's and llama.cpp's) wait at barriers, chosen per process.

A token of a small model is hundreds of short parallel regions. Spinning threads
(``OMP_WAIT_POLICY=ACTIVE``) pass each barrier at once when the cores are ours, and stall it
when the scheduler has given a spinner's core to other work; sleeping threads (``PASSIVE``)
pay a wake-up at every barrier either way. Measured on 2 cores with llama.cpp and
SmolLM2-135M (``benchmarks/omp_wait_policy.py --engine llamacpp``): idle, ACTIVE decoded
about 3x faster than PASSIVE; next to two busy processes, PASSIVE was over 2x faster than
ACTIVE. No setting wins both, so the choice follows the load when the process starts.
libgomp reads the variable once, when it loads.
"""

from __future__ import annotations

import os


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def choose_wait_policy(load: float | None = None, cores: int | None = None) -> str:
    """``OMP_WAIT_POLICY`` for this process: the user's own setting when there is one, else
    ACTIVE when the one-minute load average leaves at least half the cores idle, else
    PASSIVE. Sets it in ``os.environ`` and returns it."""
    if os.environ.get("OMP_WAIT_POLICY"):
        return os.environ["OMP_WAIT_POLICY"]
    load = os.getloadavg()[0] if load is None else load
    cores = usable_cores() if cores is None else cores
    policy = "ACTIVE" if load < cores / 2 else "PASSIVE"
    os.environ["OMP_WAIT_POLICY"] = policy
    return policy
