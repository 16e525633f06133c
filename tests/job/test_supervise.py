"""The supervisor on plain shell commands: it ends whole process trees, by PID."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from llmbench.core.limits import RunLimits
from llmbench.job.supervise import STOP_SIGNALS, Ended, Outcome, last_line, supervise


def pids_in(log: Path) -> list[int]:
    return [int(p) for p in re.findall(r"pid=(\d+)", log.read_text())]


def assert_all_gone(pids: list[int]) -> None:
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert not alive, f"left alive: {alive}"


def test_a_normal_exit_is_left_alone(tmp_path) -> None:
    log = tmp_path / "train.log"
    outcome = supervise(["bash", "-c", "echo hello; exit 3"], log, RunLimits(60, 60, 60))
    assert outcome.exit_code == 3 and outcome.ended_by == ""
    assert log.read_text() == "hello\n"


def test_time_limit_ends_children_in_sessions_of_their_own(tmp_path) -> None:
    """torchrun starts each rank in a new session: a process group kill would miss it."""
    log = tmp_path / "train.log"
    script = (
        "setsid bash -c 'echo pid=$$; exec sleep 300' & "
        "bash -c 'echo pid=$$; exec sleep 300' & "
        "echo pid=$$; while true; do echo tick; sleep 0.2; done"
    )
    started = time.monotonic()
    outcome = supervise(["bash", "-c", script], log, RunLimits(3, 60, 60), poll_s=0.2)
    assert outcome.ended_by == Ended.TIMEOUT
    assert "time limit of 3 s" in outcome.detail and "last log line: tick" in outcome.detail
    assert time.monotonic() - started < 60
    pids = pids_in(log)
    assert len(pids) == 3
    assert_all_gone(pids)


def supervise_steps(log: Path, output: str, limits: RunLimits) -> Outcome:
    """Supervise a shell that prints its pid and ``output``, then sleeps; a line with
    "step" in it counts as the first step."""
    return supervise(
        ["bash", "-c", f"echo pid=$$; {output}; exec sleep 300"],
        log,
        limits,
        has_started=lambda path: "step" in path.read_text(),
        poll_s=0.2,
    )


def test_a_silent_log_is_a_hang_only_after_the_allowance(tmp_path) -> None:
    log = tmp_path / "train.log"
    outcome = supervise_steps(log, "echo step 1", RunLimits(120, 60, 2))
    assert outcome.ended_by == Ended.HANG
    assert "after the first step (allowance 2 s)" in outcome.detail
    assert outcome.detail.endswith("last log line: step 1")
    assert outcome.wall_s >= 2
    assert_all_gone(pids_in(log))


def test_before_the_first_step_the_startup_allowance_applies(tmp_path) -> None:
    log = tmp_path / "train.log"
    outcome = supervise_steps(log, "echo importing", RunLimits(120, 3, 1))
    assert outcome.ended_by == Ended.HANG
    assert "before the first step (allowance 3 s)" in outcome.detail
    assert outcome.wall_s >= 3  # the 1 s stall allowance did not apply yet


def test_processes_left_behind_by_a_finished_launch_are_ended(tmp_path) -> None:
    log = tmp_path / "train.log"
    script = "setsid bash -c 'echo pid=$$; exec sleep 300' & sleep 0.5; echo done"
    outcome = supervise(["bash", "-c", script], log, RunLimits(60, 60, 60), poll_s=0.1)
    assert outcome.exit_code == 0 and outcome.ended_by == ""
    assert outcome.leftover_processes == 1
    assert_all_gone(pids_in(log))


def test_a_process_that_ignores_sigterm_is_killed(tmp_path) -> None:
    log = tmp_path / "train.log"
    script = "trap '' TERM; echo pid=$$; while true; do sleep 0.1; done"
    outcome = supervise(["bash", "-c", script], log, RunLimits(2, 60, 60), poll_s=0.2, grace_s=1)
    assert outcome.ended_by == Ended.TIMEOUT
    assert outcome.exit_code == -9
    assert_all_gone(pids_in(log))


def test_last_line_is_cut_to_one_short_line(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"first\n" + b"x" * 5000 + b"\n\n")
    line = last_line(log)
    assert line.startswith("xxx") and line.endswith("...") and len(line) == 203
    assert last_line(tmp_path / "missing.log") == ""


def test_environment_and_folder_reach_the_command(tmp_path) -> None:
    log = tmp_path / "train.log"
    env = dict(os.environ, LLMBENCH_PROBE="42")
    command = ["bash", "-c", "echo $LLMBENCH_PROBE; pwd"]
    supervise(command, log, RunLimits(60, 60, 60), env, tmp_path)
    assert log.read_text().split() == ["42", str(tmp_path)]


SUPERVISOR = """
import sys
from pathlib import Path
from llmbench.core.limits import RunLimits
from llmbench.job.supervise import supervise
script = "setsid bash -c 'echo pid=$$; exec sleep 300' & echo pid=$$; exec sleep 300"
supervise(["bash", "-c", script], Path(sys.argv[1]), RunLimits(600, 600, 600), poll_s=0.2)
print("supervise returned")
"""


def _start_supervisor(log: Path, ignored: tuple[signal.Signals, ...]) -> subprocess.Popen:
    """The SUPERVISOR script with the stop signals at their defaults but ``ignored`` (as
    ``nohup`` ignores SIGHUP), whatever this test process inherited."""

    def dispositions() -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)

    return subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, str(log)],
        stdout=subprocess.PIPE, text=True, preexec_fn=dispositions,
    )  # fmt: skip


def _run_pids(log: Path) -> list[int]:
    deadline = time.monotonic() + 60
    while len(pids_in(log) if log.exists() else []) < 2:
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.1)
    return pids_in(log)


def test_an_ignored_hangup_leaves_the_run_running(tmp_path) -> None:
    """``nohup snakemake ...``: a hangup the user chose to ignore must not end a run."""
    log = tmp_path / "train.log"
    supervisor = _start_supervisor(log, ignored=(signal.SIGHUP,))
    pids = _run_pids(log)
    supervisor.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert supervisor.poll() is None
    assert all(psutil.pid_exists(pid) for pid in pids)
    supervisor.send_signal(signal.SIGTERM)  # still stoppable, and it still cleans up
    supervisor.communicate(timeout=60)
    assert supervisor.returncode == -signal.SIGTERM
    assert_all_gone(pids)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stopped_supervisor_ends_the_run_first(tmp_path, sig) -> None:
    """Snakemake or scancel stopping the job: the run's processes (in sessions of their
    own) must not outlive the supervisor, which then dies of that signal."""
    log = tmp_path / "train.log"
    supervisor = _start_supervisor(log, ignored=())
    pids = _run_pids(log)
    supervisor.send_signal(sig)
    out, _ = supervisor.communicate(timeout=60)
    assert "supervise returned" not in out
    assert supervisor.returncode != 0
    if sig != signal.SIGINT:  # SIGINT's default handler raises KeyboardInterrupt: exit 1
        assert supervisor.returncode == -sig
    assert_all_gone(pids)


LOST_WORKFLOW = """
import os, subprocess, sys
from llmbench.job.sweep_processes import mark_workflow_process
mark_workflow_process(os.environ)  # this process plays Snakemake
job = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
print(job.pid, flush=True)
job.wait()
"""
JOB = """
import sys
from pathlib import Path
from llmbench.core.limits import RunLimits
from llmbench.job.supervise import supervise
from llmbench.job.sweep_processes import workflow_process
script = "setsid bash -c 'echo pid=$$; exec sleep 300' & echo pid=$$; exec sleep 300"
outcome = supervise(["bash", "-c", script], Path(sys.argv[1]), RunLimits(600, 600, 600),
                    poll_s=0.2, grace_s=5, workflow=workflow_process())
print(outcome.ended_by, outcome.detail, file=open(sys.argv[1] + ".outcome", "w"))
"""


def test_a_run_whose_workflow_is_gone_is_ended(tmp_path) -> None:
    """``kill -9`` of Snakemake: its train job lives on under ``bash -c`` and would keep
    training beside the next invocation's runs. The supervisor ends the run itself."""
    log = tmp_path / "train.log"
    workflow = subprocess.Popen(
        [sys.executable, "-c", LOST_WORKFLOW, JOB, str(log)], stdout=subprocess.PIPE, text=True
    )
    job = psutil.Process(int(workflow.stdout.readline()))
    try:
        pids = _run_pids(log)
        workflow.kill()
        workflow.wait(timeout=30)
        job.wait(timeout=60)  # the job noticed, ended its run and returned
        ended_by, detail = (tmp_path / "train.log.outcome").read_text().split(" ", 1)
        assert ended_by == Ended.WORKFLOW_LOST
        assert f"the workflow process (pid {workflow.pid}) is gone" in detail
        assert_all_gone(pids)
    finally:
        with contextlib.suppress(psutil.Error):
            job.kill()
        workflow.stdout.close()
