"""The step-time ratio of two sides and its confidence interval, by block bootstrap.

Per key, a side holds one or more runs, each a series of per-iteration step times over
the averaging window. Its step time is the mean of its runs' window means (the runs
table's ``step_time_mean_s`` when there is one run); the ratio is side B / side A.

Why a bootstrap, and why blocks: per-iteration step times are autocorrelated (a slow
phase, a periodic checkpoint or garbage collection spans neighbouring iterations), so
neither a t interval nor a rank test (Mann-Whitney, which also assumes independent
draws) holds its coverage. The circular block bootstrap (Politis & Romano 1992) resamples
blocks of consecutive iterations, keeping the correlation inside a block. Block length:
ceil(n^(1/3)) (the optimal order for the variance of a mean; Hall, Horowitz & Jing 1995),
raised to the first lag whose sample autocorrelation falls inside the +-2/sqrt(n) band,
at most n/2. With several runs on a side (a cluster or a date range), runs are resampled
first and blocks within each chosen run, so run-to-run variation widens the interval
(two-stage, slightly conservative). A side of a single run cannot show how much runs
differ (scheduling, clocks, memory placement, other jobs), yet that is often the larger
part of the noise: such a side's replicates are also scaled by exp(N(0, s)), s the robust
sd of log step time between runs of the key in the history's recent sweeps (``run_spread``;
0 with fewer than 4 such runs). A published reference is one number: no resampling.
The interval is the percentile interval of 2,000 replicates of the ratio, from a
generator seeded by the key (the same data give the same interval).

Verdict against a tolerance ``t`` (each is a statement the interval supports):
``slower`` when the whole interval lies above 1 + t, ``faster`` when it lies below
1 - t, ``same`` when it lies inside [1 - t, 1 + t]; otherwise, or with fewer than
``MIN_ITERATIONS`` iterations on a side, ``insufficient data``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
TOLERANCE = 0.05
MIN_ITERATIONS = 5


@dataclass(frozen=True)
class Ratio:
    """Side B / side A step time with its interval; NaN where it cannot be computed."""

    step_time_a_s: float
    step_time_b_s: float
    ratio: float
    low: float
    high: float


def block_length(x: np.ndarray) -> int:
    """Block length of the circular block bootstrap of ``x`` (module docstring)."""
    n = len(x)
    if n < 4:
        return 1
    base = math.ceil(n ** (1 / 3))
    centred = x - x.mean()
    variance = float(centred @ centred)
    lag = 1
    if variance > 0:
        band = 2 / math.sqrt(n)
        while lag < n // 2 and abs(float(centred[:-lag] @ centred[lag:]) / variance) > band:
            lag += 1
    return min(max(base, lag), n // 2)


def _run_replicates(x: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Bootstrap replicates of the mean of one run's series (circular blocks)."""
    n = len(x)
    b = block_length(x)
    starts = rng.integers(0, n, size=(resamples, math.ceil(n / b)))
    idx = ((starts[:, :, None] + np.arange(b)) % n).reshape(resamples, -1)[:, :n]
    return x[idx].mean(axis=1)


def side_replicates(
    runs: Sequence[np.ndarray], rng: np.random.Generator, resamples: int = RESAMPLES
) -> tuple[float, np.ndarray]:
    """(mean of the run means, its two-stage bootstrap replicates)."""
    reps = np.stack([_run_replicates(x, rng, resamples) for x in runs])
    point = float(np.mean([x.mean() for x in runs]))
    if len(runs) == 1:
        return point, reps[0]
    pick = rng.integers(0, len(runs), size=(resamples, len(runs)))
    return point, reps[pick, np.arange(resamples)[:, None]].mean(axis=1)


def key_seed(key: Sequence[object]) -> int:
    return zlib.crc32("\x1f".join(map(str, key)).encode())


def ratio_interval(
    a: Sequence[np.ndarray] | float,
    b: Sequence[np.ndarray] | float,
    seed: int,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    run_sd: float = 0.0,
) -> Ratio:
    """B / A with its percentile interval; a float side is an exact reference. A side of
    one run also varies by ``run_sd``, the sd of log step time between runs of the key
    (``run_spread``): its replicates are multiplied by exp(N(0, run_sd))."""
    rng = np.random.default_rng(seed)
    sides = []
    for side in (a, b):
        if isinstance(side, float | int):
            sides.append((float(side), np.full(resamples, float(side))))
            continue
        point, reps = side_replicates(side, rng, resamples)
        if len(side) == 1 and run_sd > 0:
            reps = reps * np.exp(rng.normal(0.0, run_sd, resamples))
        sides.append((point, reps))
    (point_a, reps_a), (point_b, reps_b) = sides
    ratios = reps_b / reps_a
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ratios, [alpha, 1 - alpha])
    return Ratio(point_a, point_b, point_b / point_a, float(low), float(high))


def run_spread(log_step_times: np.ndarray, groups: np.ndarray) -> float:
    """Robust sd of log step time between runs: 1.4826 x the median absolute deviation
    from each group's median (a group: one cluster), so a few slow sweeps in the
    history (a regression, a busy machine) do not inflate it."""
    frame = np.asarray(log_step_times, dtype=float)
    deviations = np.concatenate(
        [frame[groups == g] - np.median(frame[groups == g]) for g in np.unique(groups)]
    )
    return float(1.4826 * np.median(np.abs(deviations)))


def verdict(ratio: Ratio | None, tolerance: float = TOLERANCE) -> str:
    """``faster``, ``slower``, ``same`` or ``insufficient data`` (module docstring)."""
    if ratio is None or not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return "insufficient data"
    if ratio.low > 1 + tolerance:
        return "slower"
    if ratio.high < 1 - tolerance:
        return "faster"
    if ratio.low >= 1 - tolerance and ratio.high <= 1 + tolerance:
        return "same"
    return "insufficient data"
