"""Measure a CPU's dense GEMM peak once, so CPU MFU numbers stay comparable.

The peak per "device" is the best of several square GEMMs on ``threads`` threads (the
same thread count each rank trains with), per dtype. FLOPs of an n x n x n GEMM: 2 n^3.
Both ``matmul`` and ``linear`` are timed: on some CPUs only one of them reaches the fast
bf16 kernels, and the model's layers use ``linear``.

A GEMM is timed by the CPU time its own process got (``time.process_time``, over the
threads), not only by the wall clock: on a busy machine the scheduler gives part of the
wall time to other processes, which would lower the peak and raise every MFU measured
against it (a bf16 run at 147 % MFU when the kit calibrated under load). The shorter of
the two times is kept: the core's rate, whatever else ran beside it. The machine's
load at calibration is recorded with the peak.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence
from typing import Any

DTYPES = ("fp32", "bf16")


GEMM_OPS = ("matmul", "linear")


def gemm_flops_per_s(n: int, dtype: str, repeats: int, threads: int, op: str = "matmul") -> float:
    """Best-of-``repeats`` FLOP/s of an n x n x n GEMM on ``threads`` threads."""
    # heavy optional dependency (the embedded extra): imported only when used
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(torch_dtype)
    b = torch.randn(n, n, generator=gen).to(torch_dtype)
    gemm = torch.matmul if op == "matmul" else F.linear
    gemm(a, b)  # warm-up: page in, pick kernels
    best = float("inf")
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        gemm(a, b)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        # CPU time excludes what the scheduler gave others; a positive floor keeps a
        # clock's granularity from reading a GEMM as free
        best = min(best, max(min(wall, cpu / threads), 1e-9))
    return 2 * n**3 / best


def best_over_sizes(
    dtype: str, threads: int, sizes: Sequence[int], repeats: int, budget_s: float
) -> float:
    """Best FLOP/s over growing sizes; stops growing once one matmul costs ``budget_s``
    (slow paths, such as bf16 on CPUs without bf16 units, would otherwise take minutes)."""
    best = 0.0
    for op in GEMM_OPS:
        for n in sizes:
            flops = gemm_flops_per_s(n, dtype, repeats, threads, op)
            best = max(best, flops)
            if 2 * n**3 / flops > budget_s:
                break
    return best


def measure_peak(
    threads: int = 1,
    sizes: Sequence[int] = (256, 512, 1024),
    repeats: int = 5,
    budget_s: float = 0.05,
) -> dict[str, Any]:
    """Peak FLOP/s per dtype: the best over matrix sizes, recorded with how it was measured."""
    # heavy optional dependency (the embedded extra): imported only when used
    import torch

    peaks = {dtype: best_over_sizes(dtype, threads, sizes, repeats, budget_s) for dtype in DTYPES}
    return {
        "device": "cpu",
        "threads": threads,
        "peak_flops_per_device": peaks,
        "method": (
            f"best of {repeats} torch.matmul/linear, square sizes up to {max(sizes)}, 2*n^3 FLOPs"
            " per second of the process's own CPU time"
        ),
        "load_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "host": platform.node(),
        "torch_version": torch.__version__,
    }
