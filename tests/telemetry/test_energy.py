"""Energy over the step window: RAPL counters, GPU power integrals, NaN with reasons."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmbench.telemetry.energy import (
    JOULES_PER_KWH,
    counter_increase,
    power_integral,
    step_window,
    window_energy,
)


def clock(first: int, last: int, t0: float = 100.0, step_s: float = 0.5) -> pd.DataFrame:
    its = list(range(first, last + 1))
    starts = [t0 + (i - first) * step_s for i in its]
    return pd.DataFrame(
        {"iteration": its, "start_unix_s": starts, "end_unix_s": [s + step_s for s in starts]}
    )


def rapl_samples(node: str, watts: float, t_from: float, t_to: float, period: float = 0.25):
    times = np.arange(t_from, t_to + period / 2, period)
    return pd.DataFrame(
        {
            "time_unix_s": times,
            "node": node,
            "source": "rapl",
            "device": "package-0",
            "metric": "energy_j",
            "value": 1000 + watts * (times - t_from),
        }
    )


def test_step_window_and_its_gaps() -> None:
    assert step_window(clock(0, 9), (2, 5)) == (101.0, 103.0, 4)
    assert "cover 2 of iterations 2-5" in step_window(clock(0, 3), (2, 5))
    assert "no step timestamps" in step_window(clock(0, 0).iloc[:0], (2, 5))


def test_counter_and_power_integrals_interpolate_the_edges() -> None:
    t = np.array([0.0, 1.0, 2.0])
    assert counter_increase(t, np.array([0.0, 10.0, 30.0]), 0.5, 1.5) == pytest.approx(15.0)
    assert power_integral(t, np.array([100.0, 100.0, 300.0]), 0.5, 1.5) == pytest.approx(
        50 + 0.5 * (100 + 200) / 2
    )
    assert math.isnan(counter_increase(t, np.array([0.0, 1.0, 2.0]), -1.0, 1.0))


def test_rapl_window_energy_per_token() -> None:
    samples = rapl_samples("n1", watts=40.0, t_from=99.0, t_to=110.0)
    energy = window_energy(samples, clock(0, 19), (5, 14), 1024, 2, 1, False, {"rapl": "ok"})
    assert energy.energy_reason == "" and energy.telemetry_source == "rapl"
    assert energy.window_s == pytest.approx(5.0)
    assert energy.energy_j == pytest.approx(200.0)
    assert energy.energy_per_step_j == pytest.approx(20.0)
    assert energy.joules_per_token == pytest.approx(20.0 / 1024)
    assert energy.tokens_per_kwh == pytest.approx(JOULES_PER_KWH / (20.0 / 1024))
    assert energy.mean_power_w_per_gpu == pytest.approx(20.0)
    assert energy.clock_throttled is None


def test_missing_rapl_is_nan_with_the_samplers_reason() -> None:
    reason = "no RAPL: /sys/class/powercap does not exist"
    empty = rapl_samples("n1", 1.0, 0, 1).iloc[:0]
    energy = window_energy(empty, clock(0, 19), (5, 14), 1024, 2, 1, False, {"rapl": reason})
    assert math.isnan(energy.energy_j) and math.isnan(energy.joules_per_token)
    assert energy.energy_reason == reason


def test_partial_nodes_or_coverage_is_nan() -> None:
    samples = rapl_samples("n1", 40.0, 99.0, 110.0)
    two = window_energy(samples, clock(0, 19), (5, 14), 1024, 2, 2, False, {"rapl": "ok"})
    assert math.isnan(two.energy_j) and "1 of the run's 2 nodes" in two.energy_reason
    late = rapl_samples("n1", 40.0, 104.0, 110.0)
    cut = window_energy(late, clock(0, 19), (5, 14), 1024, 2, 1, False, {"rapl": "ok"})
    assert math.isnan(cut.energy_j) and "do not cover" in cut.energy_reason


def gpu_samples(mhz_low: float) -> pd.DataFrame:
    rows = []
    for t in np.arange(99.0, 110.01, 0.1):
        for gpu in ("gpu0", "gpu1"):
            rows.append((t, "n1", "nvidia-smi", gpu, "power_w", 500.0))
            mhz = mhz_low if gpu == "gpu1" and 103 < t < 104 else 1980.0
            rows.append((t, "n1", "nvidia-smi", gpu, "sm_clock_mhz", mhz))
            rows.append((t, "n1", "nvidia-smi", gpu, "util", 0.9))
    return pd.DataFrame(
        rows, columns=["time_unix_s", "node", "source", "device", "metric", "value"]
    )


def test_gpu_power_energy_and_throttle_flag() -> None:
    ok = window_energy(gpu_samples(1980.0), clock(0, 19), (5, 14), 4096, 2, 1, True)
    assert ok.energy_j == pytest.approx(2 * 500.0 * 5.0)
    assert ok.mean_power_w_per_gpu == pytest.approx(500.0)
    assert ok.util_mean == pytest.approx(0.9) and ok.clock_throttled is False
    slow = window_energy(gpu_samples(1200.0), clock(0, 19), (5, 14), 4096, 2, 1, True)
    assert slow.clock_throttled is True and slow.sm_clock_min_mhz == 1200.0
    four = window_energy(gpu_samples(1980.0), clock(0, 19), (5, 14), 4096, 4, 1, True)
    assert math.isnan(four.energy_j) and "2 of the run's 4 GPUs" in four.energy_reason


def test_a_run_on_part_of_a_node_counts_its_own_gpus() -> None:
    one = window_energy(gpu_samples(1980.0), clock(0, 19), (5, 14), 4096, 1, 1, True)
    assert one.energy_j == pytest.approx(500.0 * 5.0)
    assert one.mean_power_w_per_gpu == pytest.approx(500.0)
