"""The ``slow`` fault of the embedded trainer: a delay inside every step from its iteration."""

from __future__ import annotations

import time

import pytest

from llmbench.ranks.embedded.train import SLOW_STEP_S, fault_for, inject


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


def test_several_faults_each_strike_their_own_run() -> None:
    value = "oom@3:*fp32_cpux2*:1,hang@5:*bf16*"
    oom = fault_for("tiny-llama_tiny_fp32_cpux2_perf", value, attempt=1)
    assert oom is not None and (oom.kind, oom.iteration) == ("oom", 3)
    assert fault_for("tiny-llama_tiny_fp32_cpux2_perf", value, attempt=2) is None
    hang = fault_for("tiny-llama_tiny_bf16_cpux1_perf", value, attempt=2)
    assert hang is not None and (hang.kind, hang.iteration) == ("hang", 5)
    assert fault_for("tiny-llama_tiny_fp32_cpux1_perf", value, attempt=1) is None


@pytest.mark.parametrize("value", ["oom@3:a,sluggish@1:b", "oom@3:a:x", "oom@3:b:1,nan@x"])
def test_a_malformed_fault_in_a_list_fails_every_run(value: str) -> None:
    with pytest.raises(ValueError, match="several separated by ','"):
        fault_for("a", value, attempt=2)
