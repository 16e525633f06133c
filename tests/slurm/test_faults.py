"""Failures are results (tests/slurm/faults.py): an OOM, a ``scancel`` of a running job
and a time limit shorter than the run, each recorded with its reason and redone alone by
the next invocation. test_recovery.py has the other half of the fault suite."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.faults import (
    A,
    B,
    assert_no_rank_left,
    attempts,
    clean_up_what_a_test_started,
    finish,
    new_ledger,
    rerun_redoes_only,
    runs,
    start,
    wait_for_job,
)

pytestmark = pytest.mark.slurm
LEDGER = new_ledger()
STARTED = time.monotonic()


@pytest.fixture(autouse=True)
def _clean_up_what_a_test_started():
    yield
    clean_up_what_a_test_started()


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
    LEDGER["seconds"] = round(time.monotonic() - STARTED)
    print(f"fault suite ({__name__.rsplit('.', 1)[-1]}): {json.dumps(LEDGER)}")
    assert LEDGER["faults_injected"] == 3, LEDGER
    assert LEDGER["logs_lost"] == 0 and LEDGER["successful_runs_redone"] == 0
