"""Energy of a run's step window, from its telemetry samples and its step timestamps.

The window is [start of its first iteration, end of its last] (``step_clock.csv``, wall
clock); every figure is NaN, with a reason, when a source does not cover it:

- GPUs (nvidia-smi): energy = sum over GPUs of the integral of ``power.draw`` over the
  window (trapezoids, the edges interpolated); mean power per GPU = energy / window
  seconds / GPUs.
- CPUs (RAPL): energy = sum over packages of the counter's increase over the window (the
  counter interpolated at both edges). It is the whole package's energy, whoever used it;
  "per GPU" divides by the run's ranks.
- energy per step = energy / iterations in the window; joules per token = energy per step
  / (GBS x sequence length); tokens per kWh = 3.6e6 / joules per token.
- a GPU's clocks count as throttled when its SM clock in the window fell below
  ``THROTTLE_FRACTION`` of the highest SM clock it showed during the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from llmbench.text import counted

JOULES_PER_KWH = 3.6e6
THROTTLE_FRACTION = 0.9
ENERGY_DTYPES = {
    "telemetry_source": "string",
    "telemetry_nodes": "Int64",
    "window_start_unix_s": "float64",
    "window_end_unix_s": "float64",
    "window_s": "float64",
    "energy_j": "float64",
    "energy_per_step_j": "float64",
    "joules_per_token": "float64",
    "tokens_per_kwh": "float64",
    "mean_power_w_per_gpu": "float64",
    "util_mean": "float64",
    "sm_clock_min_mhz": "float64",
    "clock_throttled": "boolean",
    "energy_reason": "string",
}
"""Columns the runs table gains, and their types (docs/tables.md, docs/telemetry.md)."""


@dataclass(frozen=True)
class WindowEnergy:
    telemetry_source: str = ""
    telemetry_nodes: int = 0
    window_start_unix_s: float = math.nan
    window_end_unix_s: float = math.nan
    window_s: float = math.nan
    energy_j: float = math.nan
    energy_per_step_j: float = math.nan
    joules_per_token: float = math.nan
    tokens_per_kwh: float = math.nan
    mean_power_w_per_gpu: float = math.nan
    util_mean: float = math.nan
    sm_clock_min_mhz: float = math.nan
    clock_throttled: bool | None = None
    energy_reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def step_window(clock: pd.DataFrame, window: Sequence[int]) -> tuple[float, float, int] | str:
    """(start, end, iterations) of the window in Unix seconds, or why there is none."""
    if clock.empty:
        return "no step timestamps (step_clock.csv) for this run"
    first, last = int(window[0]), int(window[1])
    rows = clock[(clock["iteration"] >= first) & (clock["iteration"] <= last)]
    if rows["iteration"].nunique() != last - first + 1:
        return f"step timestamps cover {rows['iteration'].nunique()} of iterations {first}-{last}"
    return float(rows["start_unix_s"].min()), float(rows["end_unix_s"].max()), last - first + 1


def _covers(times: np.ndarray, t0: float, t1: float) -> bool:
    return len(times) >= 2 and times[0] <= t0 and times[-1] >= t1


def counter_increase(times: np.ndarray, values: np.ndarray, t0: float, t1: float) -> float:
    """Increase of a cumulative counter between t0 and t1 (linear between samples)."""
    if not _covers(times, t0, t1):
        return math.nan
    return float(np.interp(t1, times, values) - np.interp(t0, times, values))


def power_integral(times: np.ndarray, watts: np.ndarray, t0: float, t1: float) -> float:
    """Joules: the integral of power over [t0, t1] (trapezoids, edges interpolated)."""
    ok = ~np.isnan(watts)
    times, watts = times[ok], watts[ok]
    if not _covers(times, t0, t1):
        return math.nan
    inside = (times > t0) & (times < t1)
    grid = np.concatenate([[t0], times[inside], [t1]])
    power = np.concatenate(
        [[np.interp(t0, times, watts)], watts[inside], [np.interp(t1, times, watts)]]
    )
    return float(np.sum((power[1:] + power[:-1]) / 2 * np.diff(grid)))


def _series(
    samples: pd.DataFrame, source: str, metric: str
) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    rows = samples[(samples["source"] == source) & (samples["metric"] == metric)]
    out = {}
    for (node, device), group in rows.groupby(["node", "device"], sort=True):
        group = group.sort_values("time_unix_s", kind="stable")
        out[(str(node), str(device))] = (
            group["time_unix_s"].to_numpy(float),
            group["value"].to_numpy(float),
        )
    return out


def _mean_in(samples: pd.DataFrame, source: str, metric: str, t0: float, t1: float) -> float:
    rows = samples[
        (samples["source"] == source)
        & (samples["metric"] == metric)
        & samples["time_unix_s"].between(t0, t1)
    ]["value"]
    return float(rows.mean()) if rows.notna().any() else math.nan


def window_energy(
    samples: pd.DataFrame,
    clock: pd.DataFrame,
    window: Sequence[int],
    tokens_per_step: float,
    gpus: int,
    nodes: int,
    gpu: bool,
    source_reasons: Mapping[str, str] | None = None,
) -> WindowEnergy:
    """The energy figures of one run (module docstring); ``source_reasons`` maps each
    source the sampler tried to "ok" or why it gave nothing; ``gpu``: the run's GPUs were
    sampled by nvidia-smi (else its CPUs by the CPU sampler)."""
    reasons = dict(source_reasons or {})
    span = step_window(clock, window)
    if isinstance(span, str):
        return WindowEnergy(energy_reason=span)
    t0, t1, iterations = span
    source, metric = ("nvidia-smi", "power_w") if gpu else ("rapl", "energy_j")
    series = _series(samples, source, metric)
    if gpu:  # a run on part of a node (local-cuda x1 on an 8-GPU box) owns GPUs 0..n-1
        per_node = max(1, gpus // max(1, nodes))
        series = {key: v for key, v in series.items() if _gpu_index(key[1]) < per_node}
    util = _mean_in(samples, "nvidia-smi" if gpu else "proc_stat", "util", t0, t1)
    clocks = _clock_figures(samples, t0, t1) if gpu else (math.nan, None)
    base = WindowEnergy(
        telemetry_source=source,
        telemetry_nodes=len({node for node, _ in series}),
        window_start_unix_s=t0,
        window_end_unix_s=t1,
        window_s=t1 - t0,
        util_mean=util,
        sm_clock_min_mhz=clocks[0],
        clock_throttled=clocks[1],
    )
    reason = _missing(series, reasons.get(source, ""), source, nodes, gpus if gpu else 0)
    if reason:
        return _with(base, energy_reason=reason)
    measure = power_integral if gpu else counter_increase
    parts = [measure(times, values, t0, t1) for times, values in series.values()]
    if any(math.isnan(p) for p in parts):
        return _with(base, energy_reason=f"{source} samples do not cover the step window")
    energy = float(sum(parts))
    if energy <= 0:
        return _with(base, energy_reason=f"{source} measured {energy:.3g} J over the window")
    per_step = energy / iterations
    per_token = per_step / tokens_per_step
    return _with(
        base,
        energy_j=energy,
        energy_per_step_j=per_step,
        joules_per_token=per_token,
        tokens_per_kwh=JOULES_PER_KWH / per_token,
        mean_power_w_per_gpu=energy / (t1 - t0) / gpus,
    )


def _gpu_index(device: str) -> int:
    digits = device.removeprefix("gpu")
    return int(digits) if digits.isdigit() else 0


def _missing(
    series: Mapping[tuple[str, str], Any], status: str, source: str, nodes: int, gpus: int
) -> str:
    if not series:
        return status if status and status != "ok" else f"no {source} samples"
    sampled = len({node for node, _ in series})
    if sampled < nodes:
        return f"{source} samples from {sampled} of the run's {counted(nodes, 'node')}"
    if gpus and len(series) < gpus:
        return f"{source} power of {len(series)} of the run's {counted(gpus, 'GPU')}"
    return ""


def _clock_figures(samples: pd.DataFrame, t0: float, t1: float) -> tuple[float, bool | None]:
    lowest, throttled = math.nan, None
    for times, mhz in _series(samples, "nvidia-smi", "sm_clock_mhz").values():
        inside = mhz[(times >= t0) & (times <= t1) & ~np.isnan(mhz)]
        if not len(inside) or np.isnan(mhz).all():
            continue
        low = float(inside.min())
        lowest = low if math.isnan(lowest) else min(lowest, low)
        hit = low < THROTTLE_FRACTION * float(np.nanmax(mhz))
        throttled = bool(throttled) or hit
    return lowest, throttled


def _with(base: WindowEnergy, **changes: Any) -> WindowEnergy:
    return WindowEnergy(**{**base.as_dict(), **changes})
