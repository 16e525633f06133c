"""Recovery (tests/slurm/faults.py): a hang seen by the watchdog inside the job, a node set
DOWN while its job runs, and ``kill -9`` of snakemake mid-sweep. test_faults.py has the
other half of the fault suite."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.helpers import write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.faults import (
    A,
    B,
    account,
    assert_no_rank_left,
    clean_up_after_fault_test,  # noqa: F401 (a fixture, used by pytestmark)
    command,
    finish,
    module_ledger,  # noqa: F401 (the fixture `ledger`)
    runs,
    snapshot,
    start,
    wait_for_job,
)

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("clean_up_after_fault_test")]


def test_watchdog_in_the_job_ends_a_hang_and_retries_it(slurm_cluster, tmp_path, ledger) -> None:
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
    account(ledger, before, tmp_path, set())


def test_node_failure_is_retried_on_another_node(slurm_cluster, tmp_path, ledger) -> None:
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
    ledger["faults_injected"] += 1
    assert (tmp_path / "results/runs" / A / "attempt-1/train.log").exists()
    out = finish(start(tmp_path, fault))
    assert "Nothing to be done" in out


def test_killed_snakemake_recovers(slurm_cluster, tmp_path, ledger) -> None:
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
    account(ledger, before, tmp_path, set())
