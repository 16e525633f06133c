"""Performance metrics with their units, kept apart from any pass/fail judgement.

Formulas from the spec (llama31-nemo2-h100.txt and siblings):
tokens/s = seq_len * GBS / step_time; days = tokens / (tokens/s) / 86400;
MFU = GBS * model_flops / step_time / GPUs / peak_flops.

Each formula is plain arithmetic on its arguments, written once: it takes Python numbers
for one run (``llmbench calc``, the published results) and NumPy arrays or pandas Series
for a whole runs table (``llmbench.aggregate.runs_and_steps``), element by element.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

Values: TypeAlias = "float | np.ndarray | pd.Series"
"""A number, or one per run (an array or Series): the formulas below accept either."""

SECONDS_PER_DAY = 86_400
DEFAULT_WINDOW = (35, 44)
"""Iterations averaged for step time (inclusive), as the newer recipes' parse scripts do."""


def tokens_per_s(seq_len: Values, global_batch_size: Values, step_time_s: Values) -> Values:
    """Training throughput in tokens per second."""
    return seq_len * global_batch_size / step_time_s


def days_to_train(total_tokens: Values, throughput_tokens_per_s: Values) -> Values:
    """Days to train ``total_tokens`` at the given throughput."""
    return total_tokens / throughput_tokens_per_s / SECONDS_PER_DAY


def achieved_flops_per_gpu(
    global_batch_size: Values, model_flops_per_sample: Values, step_time_s: Values, gpus: Values
) -> Values:
    """Model FLOP/s each GPU achieves (divide by 1e12 for TFLOPS)."""
    return global_batch_size * model_flops_per_sample / step_time_s / gpus


def mfu(
    global_batch_size: Values,
    model_flops_per_sample: Values,
    step_time_s: Values,
    gpus: Values,
    peak_flops_per_gpu: Values,
) -> Values:
    """Model FLOPs utilization as a fraction (0.3093 means 30.93 %)."""
    achieved = achieved_flops_per_gpu(global_batch_size, model_flops_per_sample, step_time_s, gpus)
    return achieved / peak_flops_per_gpu


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and population standard deviation (ddof = 0); NaN, NaN when empty.

    Population std matches what the recipes' awk-based parse scripts print for a
    fixed 10-iteration window.
    """
    data = [float(v) for v in values]
    if not data:
        return math.nan, math.nan
    try:
        mean, std = _mean_std(data)
    except ValueError:  # +inf and -inf together: no mean exists
        return math.nan, math.nan
    except OverflowError:
        mean = std = math.inf
    if all(map(math.isfinite, data)) and not (math.isfinite(mean) and math.isfinite(std)):
        # values near the float maximum (a log claiming 1e308 s) overflow the sums: scale
        # by a power of two, which is exact; the results may still round to inf
        exponent = math.frexp(max(map(abs, data)))[1]
        mean, std = _mean_std([math.ldexp(v, -exponent) for v in data])
        return _ldexp_or_inf(mean, exponent), _ldexp_or_inf(std, exponent)
    return mean, std


def _ldexp_or_inf(value: float, exponent: int) -> float:
    try:
        return math.ldexp(value, exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def _mean_std(data: list[float]) -> tuple[float, float]:
    mean = math.fsum(data) / len(data)
    var = math.fsum((v - mean) * (v - mean) for v in data) / len(data)
    return mean, math.sqrt(var)


# --- Additions for the catalog and ``llmbench calc`` (units in every name) ---

FLOPS_PER_TFLOPS = 1e12


def tokens_per_s_per_gpu(tokens_per_s_total: Values, gpus: Values) -> Values:
    """Throughput per GPU: tokens/s / GPUs."""
    return tokens_per_s_total / gpus


def tflops_per_gpu(
    global_batch_size: Values, model_flops_per_sample: Values, step_time_s: Values, gpus: Values
) -> Values:
    """Achieved model TFLOPS per GPU: GBS * model_flops / step_time / GPUs / 1e12."""
    flops = achieved_flops_per_gpu(global_batch_size, model_flops_per_sample, step_time_s, gpus)
    return flops / FLOPS_PER_TFLOPS


def mfu_from_tflops(tflops_per_gpu_value: Values, peak_tflops_per_gpu: Values) -> Values:
    """MFU as a fraction from a logged TFLOPS/GPU: avg(TFLOPS_GPU) / peak
    (llama31-megatron-bridge-gb300-gb200-b200-h100.md)."""
    return tflops_per_gpu_value / peak_tflops_per_gpu
