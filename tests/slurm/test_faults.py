"""Failures are results (tests/slurm/faults.py): an OOM, a ``scancel`` of a running job
and a time limit shorter than the run, each recorded with its reason and redone alone by
the next invocation. test_recovery.py has the other half of the fault suite."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.faults import (
    A,
    B,
    assert_no_rank_left,
    attempts,
    clean_up_after_fault_test,  # noqa: F401 (a fixture, used by pytestmark)
    finish,
    new_ledger,
    report_ledger,
    rerun_redoes_only,
    runs,
    start,
    wait_for_job,
)

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("clean_up_after_fault_test")]
LEDGER = new_ledger()


def test_oom_is_recorded_and_redone(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    fault = f"oom@3:{B}:1"
    finish(start(tmp_path, fault))
    table = runs(tmp_path)
    assert table.loc[B, "status"] == "failed" and table.loc[B, "reason"] == "cuda_oom"
    assert table.loc[A, "status"] == "success"
    assert len(attempts(tmp_path, B)) == 1  # a workload failure is not retried blindly
    rerun_redoes_only(LEDGER, tmp_path, B, fault, "cuda_oom")


def test_scancel_is_recorded_and_redone(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    fault = f"hang@5:{B}:1"
    proc = start(tmp_path, fault)
    job = wait_for_job(tmp_path, B)
    subprocess.run(["scancel", job["slurm_job_id"]], check=True)
    finish(proc)
    table = runs(tmp_path)
    assert table.loc[B, "status"] == "failed" and table.loc[B, "reason"] == "cancelled"
    assert table.loc[A, "status"] == "success"
    rerun_redoes_only(LEDGER, tmp_path, B, fault, "cancelled")


def test_time_limit_is_recorded_and_redone(slurm_cluster, tmp_path) -> None:
    # llmbench's own limit inside the job ends the run; Slurm's is 5 minutes later
    write_config(tmp_path, {**CONFIG, "runtime_min": 1})
    fault = f"hang@5:{B}:1"
    finish(start(tmp_path, fault), timeout=900)
    table = runs(tmp_path)
    assert table.loc[B, "status"] == "timeout" and table.loc[B, "reason"] == "time_limit"
    assert table.loc[A, "status"] == "success"
    assert_no_rank_left(tmp_path, B)
    rerun_redoes_only(LEDGER, tmp_path, B, fault, "time_limit")


def test_ledger() -> None:
    report_ledger(LEDGER, __name__, faults=3)
