"""Training precision: bf16 autocast only where this machine runs it faster than fp32.

On a CPU without native bf16 instructions (avx512_bf16 / AMX) PyTorch emulates bf16 and
a training step under autocast is several times slower than in fp32; a config that forced
bf16 made the first step of a 2-core run take over 330 s. ``precision: auto`` therefore
decides at run time: bf16 on a CUDA device that supports it; on a CPU, bf16 only when
the CPU has the instructions *and* a small linear forward/backward under bf16 autocast
measures faster than the same in fp32 here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

PRECISIONS = ("auto", "bf16", "fp32")


@dataclass(frozen=True)
class PrecisionChoice:
    bf16: bool
    why: str


def _best_time(bf16: bool, reps: int = 5) -> float:
    import torch

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(128, 512, generator=gen)
    layer = torch.nn.Linear(512, 1024)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            y = layer(x).float().square().mean()
        y.backward()
        best = min(best, time.perf_counter() - start)
    return best


def measure_cpu_bf16() -> PrecisionChoice:
    """bf16 autocast vs fp32 on this CPU (best of a few runs of each, about 0.1 s in all)."""
    from agentworld.models.hf import cpu_has_native_bf16

    if not cpu_has_native_bf16():
        return PrecisionChoice(False, "fp32: this CPU has no native bf16 (avx512_bf16/amx_bf16), bf16 would be emulated")
    _best_time(False, reps=1)  # warm-up: first calls pay for allocation and kernel choice
    fp32, bf16 = _best_time(False), _best_time(True)
    ratio = bf16 / fp32
    if ratio < 0.9:
        return PrecisionChoice(True, f"bf16: autocast measured {1 / ratio:.2f}x faster than fp32 on this CPU")
    return PrecisionChoice(False, f"fp32: bf16 autocast measured {ratio:.2f}x the time of fp32 on this CPU")


def choose_precision(precision: str, *, cuda: bool) -> PrecisionChoice:
    """What ``precision`` (auto, bf16 or fp32) means on this machine."""
    if precision == "bf16":
        return PrecisionChoice(True, "bf16: set in the config")
    if precision == "fp32":
        return PrecisionChoice(False, "fp32: set in the config")
    if cuda:
        import torch

        ok = torch.cuda.is_bf16_supported()
        return PrecisionChoice(ok, "bf16: the GPU supports it" if ok else "fp32: the GPU has no bf16")
    return measure_cpu_bf16()
