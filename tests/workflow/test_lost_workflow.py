"""A local sweep whose Snakemake is killed, and a log deleted mid-run (probe 3: WF6, WF5).

After ``kill -9`` of Snakemake its train job must end, or the documented recovery
(``--unlock``, the same command) would run attempt 2 beside it on the same cores and
report a clean success. Attempt 1 is made slow (5 s a step, two minutes in all) so that it would
still be running when the rerun starts, had nothing ended it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import psutil
import pytest

from llmbench.job.sweep_processes import ATTEMPT_ENV
from tests.helpers import snakemake, snakemake_command, workflow_config, write_config

pytestmark = pytest.mark.workflow

RUN = "tiny-llama_tiny_fp32_cpux1_perf"
CONFIG = workflow_config("one-run")
SLOW_FIRST = "slow=5@0:*:1"  # attempt 1 only: 5 s a step
NOT_BY_ITSELF_S = 60.0  # attempt 1 needs 25 x 5 s: gone sooner only if it was ended


def sweep_processes_of(workdir: Path) -> dict[int, psutil.Process]:
    """Every live process of the sweep in ``workdir``: those working in it (Snakemake, its
    jobs, torchrun and the ranks in an attempt folder) and those carrying its marks."""
    found = {}
    for proc in psutil.process_iter():
        try:
            cwd = Path(proc.cwd())
            mark = proc.environ().get(ATTEMPT_ENV, "")
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        if cwd.is_relative_to(workdir) or mark.startswith(str(workdir)):
            found[proc.pid] = proc
    return found


def attempt_processes(workdir: Path, attempt: int) -> dict[int, psutil.Process]:
    """The attempt's processes: torchrun and the ranks work in its folder; the sampler
    carries its mark."""
    folder = str(workdir / "results/runs" / RUN / f"attempt-{attempt}")
    out = {}
    for pid, proc in sweep_processes_of(workdir).items():
        try:
            if folder in (proc.cwd(), proc.environ().get(ATTEMPT_ENV)):
                out[pid] = proc
        except psutil.Error:
            continue
    return out


def alive(procs: dict[int, psutil.Process]) -> list[int]:
    out = []
    for pid, proc in procs.items():
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            continue
    return out


def wait_gone(procs: dict[int, psutil.Process], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := alive(procs)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """The sweep's folder; whatever of the sweep is still running at the end is killed (by
    PID and start time), and the test fails if anything was."""
    write_config(tmp_path, CONFIG)
    yield tmp_path
    left = sweep_processes_of(tmp_path)
    for proc in left.values():
        try:
            proc.kill()
        except psutil.Error:
            continue
    wait_gone(left, 30)
    assert not left, f"left running at the end: {sorted(left)}"


def start_sweep(workdir: Path, fault: str) -> subprocess.Popen:
    """The sweep, as a user starts it: Snakemake in its own session (a terminal's)."""
    return subprocess.Popen(
        snakemake_command(workdir, "--cores", "2"),
        cwd=workdir,
        env=dict(os.environ, LLMBENCH_FAULT=fault, PYTHONUNBUFFERED="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for_step(workdir: Path, sweep: subprocess.Popen, iteration: int) -> Path:
    log = workdir / "results/runs" / RUN / "attempt-1/train.log"
    deadline = time.monotonic() + 300
    while not (log.exists() and f"iteration {iteration}/" in log.read_text()):
        assert time.monotonic() < deadline and sweep.poll() is None, "attempt 1 never trained"
        time.sleep(0.5)
    return log


def rerun_as_documented(workdir: Path, fault: str) -> subprocess.CompletedProcess:
    """docs/failures.md, "When Snakemake itself dies": --unlock, then the same command."""
    unlock = snakemake(workdir, "--unlock")
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    return subprocess.run(
        snakemake_command(workdir, "--cores", "2"),
        cwd=workdir,
        env=dict(os.environ, LLMBENCH_FAULT=fault, PYTHONUNBUFFERED="1"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def record(workdir: Path, attempt: int) -> dict:
    path = workdir / "results/runs" / RUN / f"attempt-{attempt}/run.json"
    return json.loads(path.read_text())


def runs_row(workdir: Path) -> pd.Series:
    return pd.read_parquet(workdir / "results/tables/runs.parquet").set_index("run_id").loc[RUN]


def test_a_killed_snakemake_takes_its_run_along_and_the_rerun_is_clean(workdir: Path) -> None:
    sweep = start_sweep(workdir, SLOW_FIRST)
    wait_for_step(workdir, sweep, 1)
    job_and_run = {p: q for p, q in sweep_processes_of(workdir).items() if p != sweep.pid}
    assert len(attempt_processes(workdir, 1)) >= 2  # torchrun and the rank, the sampler
    sweep.send_signal(signal.SIGKILL)  # Snakemake alone: its jobs are not told
    sweep.wait(timeout=60)
    assert wait_gone(job_and_run, NOT_BY_ITSELF_S) == [], "the run outlived its Snakemake"
    first = record(workdir, 1)
    assert first["ended_by"] == "workflow_lost" and f"pid {sweep.pid}" in first["end_detail"]
    assert not (workdir / "results/runs" / RUN / "run.json").exists()  # nobody waited for it

    rerun = rerun_as_documented(workdir, SLOW_FIRST)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    row = runs_row(workdir)
    assert (row.status, row.attempt, row.earlier_attempts) == ("success", 2, "1:workflow_lost")
    second = record(workdir, 2)
    assert second["ended_before_start"] == [] and second["overlap"] == [] and row.overlap == ""
    # attempt 1 had ended before attempt 2 started, and attempt 2's steps are its own
    assert first["finished_at"] < second["started_at"]
    assert 0 < row.step_time_mean_s < 1.0  # a tiny CPU step, not attempt 1's 5 s


def test_a_new_attempt_ends_the_orphans_of_the_last_one_first(workdir: Path) -> None:
    """The whole session of Snakemake killed, the train job's supervisor with it: the ranks
    (in sessions of their own) are orphans nobody watches. The next attempt ends them
    before it starts, and says so in its record and in the job's log."""
    sweep = start_sweep(workdir, SLOW_FIRST)
    wait_for_step(workdir, sweep, 1)
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait(timeout=60)
    orphans = attempt_processes(workdir, 1)
    orphans = {p: q for p, q in orphans.items() if "sampler" not in " ".join(q.cmdline())}
    assert orphans, "nothing of attempt 1 survived: the test would prove nothing"

    rerun = rerun_as_documented(workdir, SLOW_FIRST)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert alive(orphans) == []
    second = record(workdir, 2)
    ended = {entry["pid"]: entry for entry in second["ended_before_start"]}
    assert set(orphans) <= set(ended), (sorted(orphans), second["ended_before_start"])
    assert {entry["attempt"] for entry in ended.values()} == {f"{RUN}/attempt-1"}
    row = runs_row(workdir)
    assert (row.status, row.attempt, row.earlier_attempts) == ("success", 2, "1:killed")
    assert row.overlap == "" and 0 < row.step_time_mean_s < 1.0
    job_log = (workdir / "results/logs/train" / f"{RUN}.log").read_text()
    assert "ending" in job_log and "before attempt-2 starts" in job_log


def test_a_log_deleted_mid_run_is_the_attempts_outcome(workdir: Path) -> None:
    """WF5: the train job crashed with a ParseError traceback after training, Snakemake
    redid the run, and the table called the finished attempt 1 `killed`."""
    sweep = start_sweep(workdir, "slow=1@0:*:1")
    log = wait_for_step(workdir, sweep, 2)
    log.unlink()
    assert sweep.wait(timeout=600) == 0
    job_log = (workdir / "results/logs/train" / f"{RUN}.log").read_text()
    assert "Traceback" not in job_log, job_log[-3000:]
    row = runs_row(workdir)
    assert (row.status, row.reason, row.attempt, row.attempts) == ("no_data", "log_missing", 1, 1)
    assert record(workdir, 1)["exit_code"] == 0  # training itself finished

    again = snakemake(workdir, "--cores", "2")  # the run had no result: it is redone
    assert again.returncode == 0, again.stderr[-3000:]
    row = runs_row(workdir)
    assert (row.status, row.attempt, row.earlier_attempts) == ("success", 2, "1:log_missing")
