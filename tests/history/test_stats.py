"""The block bootstrap of the step-time ratio and the verdict rule."""

from __future__ import annotations

import numpy as np
import pytest

from llmbench.history import stats
from llmbench.history.stats import Ratio, block_length, ratio_interval, run_spread, verdict
from tests.history.results import ar1


def test_block_length_grows_with_autocorrelation() -> None:
    rng = np.random.default_rng(1)
    white = rng.normal(1.0, 0.01, 200)
    correlated = 1.0 + ar1(200, rng, 0.9, 0.01)
    assert block_length(white) == 6  # ceil(200^(1/3)): no lag beyond the band
    assert block_length(correlated) > 10
    assert block_length(np.ones(10)) == 3 and block_length(np.ones(3)) == 1


def _coverage(trials: int = 300) -> float:
    """Share of 95 % intervals that hold the true ratio 1.1 of AR(1) series (phi 0.6)."""
    rng = np.random.default_rng(7)
    covered = 0
    for trial in range(trials):
        a = 1.0 + ar1(40, rng, 0.6, 0.02)
        b = 1.1 * (1.0 + ar1(40, rng, 0.6, 0.02))
        r = ratio_interval([a], [b], seed=trial)
        covered += r.low <= 1.1 <= r.high
    return covered / trials


def test_blocks_keep_the_coverage_that_iid_resampling_loses(monkeypatch) -> None:
    """Autocorrelated step times: resampling single iterations (block length 1) gives
    intervals far too narrow; the block bootstrap comes much closer to 95 %."""
    blocks = _coverage()
    monkeypatch.setattr(stats, "block_length", lambda x: 1)
    single = _coverage()
    assert blocks >= 0.75, blocks
    assert blocks - single >= 0.1, (blocks, single)


def test_ratio_is_b_over_a_with_several_runs_per_side() -> None:
    rng = np.random.default_rng(3)
    a = [1.0 + rng.normal(0, 0.01, 30) for _ in range(3)]
    b = [1.3 + rng.normal(0, 0.01, 30) for _ in range(2)]
    r = ratio_interval(a, b, seed=0)
    assert r.ratio == pytest.approx(np.mean([x.mean() for x in b]) / np.mean([x.mean() for x in a]))
    assert r.low < r.ratio < r.high and r.low > 1.25 and r.high < 1.35
    assert ratio_interval(a, b, seed=0) == r  # seeded: the same data, the same interval


def test_published_side_is_exact() -> None:
    b = [np.array([2.0, 2.2, 1.8, 2.0, 2.1, 1.9])]
    r = ratio_interval(1.0, b, seed=0)
    assert r.step_time_a_s == 1.0 and r.ratio == pytest.approx(2.0)
    assert 1.8 < r.low < 2.0 < r.high < 2.2


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1.06, 1.2, "slower"),
        (0.8, 0.94, "faster"),
        (0.96, 1.04, "same"),
        (0.97, 1.08, "insufficient data"),
        (0.9, 1.1, "insufficient data"),
        (1.05, 1.2, "insufficient data"),  # touches the bound: not beyond it
    ],
)
def test_verdict_rule(low: float, high: float, expected: str) -> None:
    assert verdict(Ratio(1.0, 1.0, (low + high) / 2, low, high), 0.05) == expected


def test_no_interval_is_insufficient() -> None:
    assert verdict(None) == "insufficient data"
    assert verdict(Ratio(1.0, np.nan, np.nan, np.nan, np.nan)) == "insufficient data"


def test_run_spread_is_robust_to_a_few_slow_runs() -> None:
    rng = np.random.default_rng(0)
    logs = np.log(1.0 + rng.normal(0, 0.05, 40))
    groups = np.array(["eos"] * 20 + ["selene"] * 20)
    shifted = np.where(groups == "selene", logs + np.log(1.5), logs)  # clusters differ
    assert run_spread(shifted, groups) == pytest.approx(0.05, rel=0.3)
    with_outliers = shifted.copy()
    with_outliers[:3] += np.log(3.0)  # three sweeps on a busy machine
    assert run_spread(with_outliers, groups) == pytest.approx(run_spread(shifted, groups), rel=0.3)


def test_run_spread_widens_a_single_run_side() -> None:
    rng = np.random.default_rng(2)
    a, b = [1.0 + rng.normal(0, 0.01, 20)], [1.08 + rng.normal(0, 0.01, 20)]
    narrow = ratio_interval(a, b, seed=1)
    wide = ratio_interval(a, b, seed=1, run_sd=0.05)
    assert verdict(narrow) == "slower" and verdict(wide) == "insufficient data"
    assert wide.high - wide.low > 3 * (narrow.high - narrow.low)
    assert wide.ratio == narrow.ratio  # the estimate itself does not move
    # two runs a side: their spread comes from resampling them, not from run_sd
    several = ratio_interval([a[0], a[0] * 1.01], [b[0], b[0] * 1.01], seed=1, run_sd=0.05)
    assert several.low > 1.0
