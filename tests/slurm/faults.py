"""Fault injection on the real local Slurm cluster, for test_faults.py and test_recovery.py
(two files, so that the two halves run on two pytest-xdist workers, each with its own
cluster).

Each test runs a small sweep (A: 1 rank on 1 node, B: 2 ranks on 2 nodes, and two more
runs in the test that holds three faults in one sweep), injects its faults, checks each
classified reason in the table and that the other runs finished, then runs the same
command again and checks that exactly the failed runs were redone and that every earlier
attempt's log is still on disk. Each module's ledger reports three counts:
faults injected, logs lost (must be 0) and successful runs redone (must be 0).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest

from tests.helpers import REPO, snakemake_command
from tests.slurm.conftest import SLURM_TEST_OVERRIDES

A = "tiny-llama_tiny_fp32_cpux1_perf"
B = "tiny-llama_tiny_fp32_cpux2_perf"
STARTED_PROCS: list[subprocess.Popen] = []


def new_ledger() -> dict[str, int]:
    """A module's counts, and when it started (``seconds`` in its report)."""
    return {"faults_injected": 0, "logs_lost": 0, "successful_runs_redone": 0,
            "started": round(time.monotonic())}  # fmt: skip


def report_ledger(ledger: dict[str, int], module: str) -> None:
    """Print the module's ledger; no log lost, no success redone."""
    counts = {k: v for k, v in ledger.items() if k != "started"}
    counts["seconds"] = round(time.monotonic()) - ledger["started"]
    print(f"fault suite ({module.rsplit('.', 1)[-1]}): {json.dumps(counts)}")
    assert counts["logs_lost"] == 0 and counts["successful_runs_redone"] == 0, counts


@pytest.fixture(scope="module", name="ledger")
def module_ledger(request: pytest.FixtureRequest) -> Iterator[dict[str, int]]:
    """The module's ledger, reported once its last test is done, in whatever order its
    tests ran (a test of its own would have to run last)."""
    counts = new_ledger()
    yield counts
    report_ledger(counts, request.module.__name__)


@pytest.fixture
def clean_up_after_fault_test() -> Iterator[None]:
    """A failing test must not leave snakemake or Slurm jobs behind (on this cluster)."""
    yield
    for proc in STARTED_PROCS:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
    STARTED_PROCS.clear()
    jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
    for job_id in jobs.stdout.split():
        subprocess.run(["scancel", job_id], check=False)


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


def account(
    ledger: dict[str, int],
    before: dict[Path, str],
    workdir: Path,
    succeeded_before: set[str],
    faults: int = 1,
) -> None:
    after = snapshot(workdir)
    # lost: gone, truncated or overwritten (a killed job's srun may still append a line)
    lost = [p for p, text in before.items() if not after.get(p, "").startswith(text)]
    redone = [r for r in succeeded_before if len(attempts(workdir, r)) > 1]
    ledger["faults_injected"] += faults
    ledger["logs_lost"] += len(lost)
    ledger["successful_runs_redone"] += len(redone)
    assert not lost, lost
    assert not redone, redone


def rerun_redoes_only(
    ledger: dict[str, int], workdir: Path, failed: dict[str, str], fault: str | None
) -> None:
    """The same command again, with the same faults armed (they strike first attempts
    only): exactly the ``failed`` runs are redone, each with its first attempt's reason."""
    table = runs(workdir)
    succeeded = set(table.index[table.status == "success"])
    assert not succeeded & failed.keys(), table[["status", "reason"]]
    before = snapshot(workdir)
    finish(start(workdir, fault))
    table = runs(workdir)
    assert (table.status == "success").all(), table[["status", "reason", "attempt"]]
    for run_id, reason in failed.items():
        assert len(attempts(workdir, run_id)) == 2
        assert table.loc[run_id, "attempt"] == 2 and table.loc[run_id, "attempts"] == 2
        assert table.loc[run_id, "earlier_attempts"] == f"1:{reason}"
    account(ledger, before, workdir, succeeded, faults=len(failed))
