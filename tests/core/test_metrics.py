"""Metrics against values computed by hand from the spec's worked examples."""

import math

import pytest

from llmbench.core import metrics


def test_tokens_per_s_worked_example() -> None:
    # llama31-nemo2-h100.txt: 8192 * 128 / 12.39 = 84631 (rounded)
    assert round(metrics.tokens_per_s(8192, 128, 12.39)) == 84631


def test_days_to_train_worked_example() -> None:
    # 1e12 / 84631 / 86400 = 136.76 days
    assert metrics.days_to_train(1e12, 84631) == pytest.approx(136.76, abs=0.005)


def test_mfu_worked_example() -> None:
    # MFU = 128 * 4.74E+14 / 12.39 / 8 / 1979E+12 = 30.93%
    value = metrics.mfu(128, 4.74e14, 12.39, 8, 1979e12)
    assert round(value * 100, 2) == 30.93


def test_achieved_flops_times_gpus_is_total_work_rate() -> None:
    per_gpu = metrics.achieved_flops_per_gpu(256, 1e15, 2.0, 64)
    assert per_gpu * 64 * 2.0 == pytest.approx(256 * 1e15)


def test_mean_std_is_population_std() -> None:
    mean, std = metrics.mean_std([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert std == pytest.approx(math.sqrt(1.25))  # ddof = 0, not sqrt(5/3)


def test_mean_std_of_nothing_is_nan() -> None:
    assert all(math.isnan(v) for v in metrics.mean_std([]))
