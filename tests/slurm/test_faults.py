"""Failures are results: faults injected on the real local Slurm cluster.

Each test runs a 2-run sweep (A: 1 rank on 1 node, B: 2 ranks on 2 nodes), injects one
fault, checks the classified reason in the table and that the other run finished, then
runs the same command again and checks that exactly the failed run was redone and that
every earlier attempt's log is still on disk. The module's ledger reports three counts:
faults injected, logs lost (must be 0) and successful runs redone (must be 0).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.conftest import REPO, snakemake_command, write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.conftest import SLURM_TEST_OVERRIDES

pytestmark = pytest.mark.slurm

A = "tiny-llama_tiny_fp32_cpux1_perf"
B = "tiny-llama_tiny_fp32_cpux2_perf"
LEDGER = {"faults_injected": 0, "logs_lost": 0, "successful_runs_redone": 0}
STARTED_PROCS: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _clean_up_what_a_test_started():
    """A failing test must not leave snakemake or Slurm jobs behind."""
    yield
    for proc in STARTED_PROCS:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
    STARTED_PROCS.clear()
    jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
    for job_id in jobs.stdout.split():
        subprocess.run(["scancel", job_id], check=False)


STARTED = time.monotonic()


TARGET = "results/tables/runs.parquet"
"""What each invocation builds: the runs table that every check reads. The plots and the
telemetry table add two more Slurm stages per invocation and prove nothing about faults;
tests/slurm/test_workflow_slurm.py runs the whole DAG through Slurm."""


def command(workdir: Path) -> list[str]:
    return snakemake_command(
        workdir, "--profile", str(REPO / "profiles/slurm"), *SLURM_TEST_OVERRIDES, TARGET
    )


def start(workdir: Path, fault: str | None) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("LLMBENCH_FAULT", None)
    if fault:
        env["LLMBENCH_FAULT"] = fault
    return subprocess.Popen(
        command(workdir),
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 600) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-5000:]
    return out


def attempts(workdir: Path, run_id: str) -> list[Path]:
    return sorted((workdir / "results/runs" / run_id).glob("attempt-*"))


def runs(workdir: Path) -> pd.DataFrame:
    return pd.read_parquet(workdir / "results/tables/runs.parquet").set_index("run_id")


def wait_for_job(workdir: Path, run_id: str, timeout: float = 300) -> dict:
    """The job.json of the run's first attempt, once its trainer is logging steps."""
    deadline = time.monotonic() + timeout
    first = workdir / "results/runs" / run_id / "attempt-1"
    while time.monotonic() < deadline:
        log = first / "train.log"
        if (first / "job.json").exists() and log.exists() and "iteration 3/" in log.read_text():
            return json.loads((first / "job.json").read_text())
        time.sleep(1)
    raise AssertionError(f"{run_id} never started")


def assert_no_rank_left(workdir: Path, run_id: str) -> None:
    """Every rank a log names (``llmbench rank r/w pid N``) is gone: all nodes of the test
    cluster are this machine."""
    for log in (workdir / "results/runs" / run_id).glob("attempt-*/train.log"):
        for pid in re.findall(r"^(?:\d+: )?llmbench rank \d+/\d+ pid (\d+)", log.read_text(), re.M):
            assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == "zombie"


def snapshot(workdir: Path) -> dict[Path, str]:
    """Every attempt log on disk, with its content."""
    return {p: p.read_text() for p in (workdir / "results/runs").glob("*/attempt-*/train.log")}


def account(before: dict[Path, str], workdir: Path, succeeded_before: set[str]) -> None:
    after = snapshot(workdir)
    # lost: gone, truncated or overwritten (a killed job's srun may still append a line)
    lost = [p for p, text in before.items() if not after.get(p, "").startswith(text)]
    redone = [r for r in succeeded_before if len(attempts(workdir, r)) > 1]
    LEDGER["faults_injected"] += 1
    LEDGER["logs_lost"] += len(lost)
    LEDGER["successful_runs_redone"] += len(redone)
    assert not lost, lost
    assert not redone, redone


def rerun_redoes_only(workdir: Path, failed: str, fault: str | None, reason: str) -> None:
    table = runs(workdir)
    succeeded = set(table.index[table.status == "success"])
    assert failed not in succeeded
    before = snapshot(workdir)
    finish(start(workdir, fault))
    table = runs(workdir)
    assert (table.status == "success").all(), table[["status", "reason", "attempt"]]
    assert len(attempts(workdir, failed)) == 2
    assert table.loc[failed, "attempt"] == 2 and table.loc[failed, "attempts"] == 2
    assert table.loc[failed, "earlier_attempts"] == f"1:{reason}"
    account(before, workdir, succeeded)


def test_oom_is_recorded_and_redone(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    fault = f"oom@3:{B}:1"
    finish(start(tmp_path, fault))
    table = runs(tmp_path)
    assert table.loc[B, "status"] == "failed" and table.loc[B, "reason"] == "cuda_oom"
    assert table.loc[A, "status"] == "success"
    assert len(attempts(tmp_path, B)) == 1  # a workload failure is not retried blindly
    rerun_redoes_only(tmp_path, B, fault, "cuda_oom")


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
    rerun_redoes_only(tmp_path, B, fault, "cancelled")


def test_time_limit_is_recorded_and_redone(slurm_cluster, tmp_path) -> None:
    # llmbench's own limit inside the job ends the run; Slurm's is 5 minutes later
    write_config(tmp_path, {**CONFIG, "runtime_min": 1})
    fault = f"hang@5:{B}:1"
    finish(start(tmp_path, fault), timeout=900)
    table = runs(tmp_path)
    assert table.loc[B, "status"] == "timeout" and table.loc[B, "reason"] == "time_limit"
    assert table.loc[A, "status"] == "success"
    assert_no_rank_left(tmp_path, B)
    rerun_redoes_only(tmp_path, B, fault, "time_limit")


def test_watchdog_in_the_job_ends_a_hang_and_retries_it(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, {**CONFIG, "watchdog": {"stall_s": 10}})
    before = snapshot(tmp_path)
    finish(start(tmp_path, f"hang@5:{B}:1"), timeout=900)
    table = runs(tmp_path)
    assert (table.status == "success").all(), table[["status", "reason"]]
    assert table.loc[B, "attempt"] == 2 and table.loc[B, "earlier_attempts"] == "1:no_progress"
    first = json.loads((tmp_path / "results/runs" / B / "attempt-1/run.json").read_text())
    assert first["ended_by"] == "hang" and first["retried"] is True
    # the stacks of the ranks on the job's first node, saved before they were ended
    assert any("inject" in (tmp_path / "results/runs" / B / n).read_text()
               for n in first["stack_dumps"])  # fmt: skip
    assert_no_rank_left(tmp_path, B)
    account(before, tmp_path, set())


def test_node_failure_is_retried_on_another_node(slurm_cluster, tmp_path) -> None:
    # Both runs fit on one node here: a fake node set DOWN and resumed keeps stale job
    # steps, so nothing should need the failed node again.
    write_config(tmp_path, {**CONFIG, "ranks_per_node": 2})
    fault = f"hang@5:{A}:1"
    proc = start(tmp_path, fault)
    job = wait_for_job(tmp_path, A)
    node = job["nodelist"]
    subprocess.run(
        ["scontrol", "update", f"nodename={node}", "state=down", "reason=llmbench-test"],
        check=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "results/runs" / A / "attempt-2").exists():
            assert time.monotonic() < deadline, "no retry of the node failure"
            time.sleep(1)
    finally:  # a node that came back by itself refuses "resume": nothing to undo then
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], check=False)
    finish(proc)
    table = runs(tmp_path)
    assert (table.status == "success").all(), table[["status", "reason"]]
    assert table.loc[A, "attempt"] == 2
    assert table.loc[A, "earlier_attempts"] == "1:node_failure"
    first = json.loads((tmp_path / "results/runs" / A / "attempt-1/run.json").read_text())
    assert first["failure_reason"] == "node_failure"
    second = json.loads((tmp_path / "results/runs" / A / "attempt-2/job.json").read_text())
    assert second["nodelist"] != node  # the retry avoided the failed node
    LEDGER["faults_injected"] += 1
    assert (tmp_path / "results/runs" / A / "attempt-1/train.log").exists()
    out = finish(start(tmp_path, fault))
    assert "Nothing to be done" in out


def test_killed_snakemake_recovers(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    proc = start(tmp_path, f"hang@5:{B}:1")
    job = wait_for_job(tmp_path, B)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    subprocess.run(["scancel", job["slurm_job_id"]], check=False)  # its orphaned job
    before = snapshot(tmp_path)
    unlock = subprocess.run([*command(tmp_path), "--unlock"], cwd=tmp_path, capture_output=True)
    assert unlock.returncode == 0
    finish(start(tmp_path, None))
    table = runs(tmp_path)
    assert (table.status == "success").all(), table[["status", "reason"]]
    assert table.loc[B, "attempt"] == 2
    account(before, tmp_path, set())


def test_ledger() -> None:
    LEDGER["seconds"] = round(time.monotonic() - STARTED)
    print(f"fault suite: {json.dumps(LEDGER)}")
    assert LEDGER["faults_injected"] == 6, LEDGER
    assert LEDGER["logs_lost"] == 0 and LEDGER["successful_runs_redone"] == 0
