"""Failures are results (tests/slurm/faults.py): an OOM, a ``scancel`` of a running job
and a time limit shorter than the run, all in one sweep, each recorded with its reason and
redone alone by the next invocation. test_recovery.py has the other half of the fault suite."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers import tiny_sweep, write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.faults import (
    A,
    B,
    assert_no_rank_left,
    attempts,
    clean_up_after_fault_test,  # noqa: F401 (a fixture, used by pytestmark)
    finish,
    module_ledger,  # noqa: F401 (the fixture `ledger`)
    rerun_redoes_only,
    runs,
    start,
    wait_for_job,
)

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("clean_up_after_fault_test")]


C = "tiny-llama_tiny_bf16_cpux2_perf"
D = "tiny-llama_tiny_bf16_cpux1_perf"
FAULTS = f"oom@3:{B}:1,hang@5:{C}:1,hang@5:{D}:1"
"""B runs out of memory, C hangs until it is cancelled, D hangs until its time limit."""


def fault_config(d_runtime_min: int | None) -> dict:
    """A and B as in every fault test, C, and D in a sweep entry with its own time limit
    (a 1-minute limit for the whole sweep could strike the other runs on a loaded host)."""
    d = {**tiny_sweep((1,), ("bf16",)), "runtime_min": d_runtime_min}
    return {**CONFIG, "sweeps": [*CONFIG["sweeps"], tiny_sweep((2,), ("bf16",)), d]}


def test_oom_scancel_and_time_limit_are_recorded_and_redone(
    slurm_cluster, tmp_path, ledger
) -> None:
    """Three faults in one sweep, one rerun: each failed run is recorded with its reason
    and redone alone, the run that succeeded is kept."""
    write_config(tmp_path, fault_config(1))
    proc = start(tmp_path, FAULTS)
    job = wait_for_job(tmp_path, C)
    subprocess.run(["scancel", job["slurm_job_id"]], check=True)
    finish(proc, timeout=900)
    table = runs(tmp_path)
    assert table.loc[A, "status"] == "success"
    assert table.loc[B, "status"] == "failed" and table.loc[B, "reason"] == "cuda_oom"
    assert len(attempts(tmp_path, B)) == 1  # a workload failure is not retried blindly
    assert table.loc[C, "status"] == "failed" and table.loc[C, "reason"] == "cancelled"
    # llmbench's own limit inside the job ended D; Slurm's is 5 minutes later
    assert table.loc[D, "status"] == "timeout" and table.loc[D, "reason"] == "time_limit"
    assert_no_rank_left(tmp_path, D)
    # the user lifts D's limit (only D's run changes) and runs the same command again
    write_config(tmp_path, fault_config(None))
    rerun_redoes_only(ledger, tmp_path, {B: "cuda_oom", C: "cancelled", D: "time_limit"}, FAULTS)
