"""The ``slow`` fault of the embedded trainer: a delay inside every step from its iteration."""

from __future__ import annotations

import time

import pytest

from llmbench.embedded.train import SLOW_STEP_S, fault_for, inject


def test_slow_fault_parses_and_targets_one_run() -> None:
    fault = fault_for("tiny-llama_tiny_fp32_cpux2_perf", "slow@3:*cpux2*")
    assert fault is not None and (fault.kind, fault.iteration) == ("slow", 3)
    assert fault_for("tiny-llama_tiny_fp32_cpux1_perf", "slow@3:*cpux2*") is None


def test_slow_fault_delays_every_step_from_its_iteration() -> None:
    fault = fault_for("r", "slow@2")
    delays = []
    for iteration in range(4):
        start = time.perf_counter()
        assert inject(fault, iteration) is False  # the loss stays a number
        delays.append(time.perf_counter() - start)
    assert all(d >= SLOW_STEP_S for d in delays[2:]), delays
    assert all(d < SLOW_STEP_S for d in delays[:2]), delays


def test_unknown_kind_names_the_slow_kind() -> None:
    with pytest.raises(ValueError, match="slow"):
        fault_for("r", "sluggish@1")


def test_slow_fault_takes_its_delay_in_seconds() -> None:
    fault = fault_for("r", "slow=0.3@0")
    assert fault is not None and fault.delay_s == 0.3
    start = time.perf_counter()
    inject(fault, 0)
    assert time.perf_counter() - start >= 0.3


@pytest.mark.parametrize("value", ["slow=0@1", "slow=-1@1", "slow=x@1", "nan=0.5@1", "slow=1e9@1"])
def test_a_bad_slow_delay_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="slow=<seconds>"):
        fault_for("r", value)
