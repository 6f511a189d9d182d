"""How OpenMP threads (torch's and llama.cpp's) wait at barriers: one choice per process.

A token of a small model is hundreds of short parallel regions. Spinning threads
(``OMP_WAIT_POLICY=ACTIVE``) pass each barrier at once when the cores are theirs; sleeping
threads (``PASSIVE``) pay a wake-up at every barrier. Spinning loses badly whenever something
else wants the cores -- other jobs, or the other runtime in the same process: torch and
llama.cpp each keep their own OpenMP pool, and a spinning torch pool starves llama.cpp.
Measured on 2 cores (SmolLM2-135M):

- next to other jobs (load 5-7), 32 sampled torch tokens took 90-125 s with libgomp's default
  spinning and 16.6 s passive (``benchmarks/omp_wait_policy.py``);
- llama.cpp alone on idle cores decoded 18.8 tok/s spinning against 12.5 passive
  (``benchmarks/embedded_speed.py --no-hf``), but 9.0 spinning once torch had run in the
  same process.

So PASSIVE is the default: never the fastest by much, never the slowest by a lot. A user
who runs llama.cpp alone on a dedicated machine can set ``OMP_WAIT_POLICY=ACTIVE``; their
setting always wins. libgomp reads the variable once, when it loads.
"""

from __future__ import annotations

import os

DEFAULT_POLICY = "PASSIVE"


def choose_wait_policy() -> str:
    """``OMP_WAIT_POLICY`` for this process: the user's own setting when there is one, else
    PASSIVE. Sets it in ``os.environ`` (before torch or llama.cpp loads) and returns it."""
    if not os.environ.get("OMP_WAIT_POLICY"):
        os.environ["OMP_WAIT_POLICY"] = DEFAULT_POLICY
    return os.environ["OMP_WAIT_POLICY"]
