"""Every run is bounded: the real embedded trainer (torchrun, 2 ranks) under the runner's
time limit and watchdog, with faults injected. After each, no process of the run is alive."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from llmbench.core.config import validate_and_expand
from llmbench.core.limits import RunLimits
from llmbench.core.runspec import RunSpec
from llmbench.job.attempts import attempt_outcome, retry_token, run_or_salvage
from llmbench.job.runner import run_attempt
from tests.helpers import REPO, tiny_config

STEPS = 10


def spec(limits: RunLimits, ranks: int = 2) -> RunSpec:
    raw = tiny_config((ranks,), steps=STEPS, window=[5, 9])
    (only,) = validate_and_expand(raw)[1]
    return replace(only, limits=limits)


def assert_nothing_left(attempt_dir: Path) -> None:
    """No process of the attempt runs: neither the ranks named in the log nor anything
    working in the attempt folder (torchrun's agent, bash)."""
    log = (attempt_dir / "train.log").read_text()
    ranks = [int(p) for p in re.findall(r"^llmbench rank \d+/\d+ pid (\d+)", log, re.M)]
    assert ranks, "the ranks never started"
    for pid in ranks:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", pid
    here = []
    for proc in psutil.process_iter(["cwd", "status"]):
        if proc.info["cwd"] == str(attempt_dir) and proc.info["status"] != "zombie":
            here.append(proc.pid)
    assert not here, f"processes still working in {attempt_dir}: {here}"


def run_hanging(run_dir: Path, limits: RunLimits, at: int = 3) -> dict:
    """One attempt whose ranks hang at iteration ``at``, under the given limits."""
    return run_attempt(spec(limits), run_dir, env={"LLMBENCH_FAULT": f"hang@{at}"})


def test_time_limit_ends_the_run_as_timeout_and_keeps_the_log(tmp_path) -> None:
    run_dir = tmp_path / "run"
    record = run_hanging(run_dir, RunLimits(time_limit_s=20, startup_s=300, stall_s=300))
    attempt_dir = run_dir / "attempt-1"
    assert record["ended_by"] == "timeout"
    assert "time limit of 20 s" in record["end_detail"]
    # the log's last line when the limit struck (under heavy load the ranks may still be
    # starting then), and the log is kept
    last = record["end_detail"].split("; last log line: ", 1)[1]
    assert last and last[:100] in (attempt_dir / "train.log").read_text()  # cut to one line
    assert attempt_outcome(run_dir, record) == ("timeout", "time_limit")
    assert json.loads((attempt_dir / "run.json").read_text())["ended_by"] == "timeout"
    assert_nothing_left(attempt_dir)


def test_watchdog_ends_a_silent_run_as_hang_with_stack_dumps(tmp_path) -> None:
    run_dir = tmp_path / "run"
    record = run_hanging(run_dir, RunLimits(time_limit_s=300, startup_s=300, stall_s=6))
    attempt_dir = run_dir / "attempt-1"
    assert record["ended_by"] == "hang"
    assert attempt_outcome(run_dir, record) == ("hang", "no_progress")
    # py-spy's native dumps of the agent and both ranks; the ranks are in the injected hang
    dumps = [(run_dir / name).read_text() for name in record["stack_dumps"]]
    assert len(dumps) == 3, record["stack_dumps"]
    assert sum("inject (llmbench/ranks/embedded/train.py" in d for d in dumps) == 2
    assert not list(attempt_dir.glob("stack-rank*.txt"))  # empty fallback files are dropped
    assert_nothing_left(attempt_dir)


def test_without_py_spy_the_ranks_dump_their_own_stacks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the interpreter's folder holds py-spy
    run_dir = tmp_path / "run"
    record = run_hanging(run_dir, RunLimits(time_limit_s=300, startup_s=300, stall_s=6))
    assert record["ended_by"] == "hang"
    assert sorted(Path(n).name for n in record["stack_dumps"]) == [
        "stack-rank0.txt",
        "stack-rank1.txt",
    ]
    for name in record["stack_dumps"]:
        text = (run_dir / name).read_text()
        assert "Current thread" in text and "in inject" in text
    assert_nothing_left(run_dir / "attempt-1")


def test_a_finished_run_that_does_not_exit_keeps_its_numbers(tmp_path) -> None:
    run_dir = tmp_path / "run"
    # the ranks hang after their last step
    record = run_hanging(run_dir, RunLimits(time_limit_s=300, startup_s=300, stall_s=6), STEPS)
    assert record["ended_by"] == "hang"
    assert attempt_outcome(run_dir, record) == ("success", "teardown_hang")
    assert_nothing_left(run_dir / "attempt-1")


def test_a_hang_is_retried_at_once_and_the_retry_is_not_counted(tmp_path) -> None:
    run_dir = tmp_path / "run"
    # a stall allowance the clean retry keeps even when a shared machine is heavily loaded
    limits = RunLimits(time_limit_s=300, startup_s=300, stall_s=30)
    env = {"LLMBENCH_FAULT": "hang@3:*:1"}  # only the first attempt hangs
    record = run_or_salvage(spec(limits), run_dir, job_attempt=1, infra_retries=1, env=env)
    assert record["attempt"] == 2 and record["ended_by"] == ""
    assert attempt_outcome(run_dir, record) == ("success", "")
    first = json.loads((run_dir / "attempt-1/run.json").read_text())
    assert first["ended_by"] == "hang" and first["retried"] is True
    (run_dir / "run.json").write_text(json.dumps(record))
    assert retry_token(run_dir, keep_failed=False) == 0  # nothing left to redo
    assert_nothing_left(run_dir / "attempt-1")


def test_launch_env_names_the_interpreter_and_goes_first_on_the_path(tmp_path, monkeypatch):
    """A framework run's ``env`` names the stage venv's interpreter and this checkout's
    source: the ranks run that interpreter, with that source before the job's own path."""
    seen = tmp_path / "seen.txt"
    python = tmp_path / "venv-python"
    python.write_text(f'#!/bin/bash\necho "$PYTHONPATH" >> {seen}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", "/job/own")
    src = str(REPO / "src")
    env = {"LLMBENCH_PYTHON": str(python), "PYTHONPATH": src}
    record = run_attempt(spec(RunLimits(300, 300, 60), 1), tmp_path / "run", env=env)
    assert record["exit_code"] == 0
    assert seen.read_text().splitlines()[0] == f"{src}:/job/own"


@pytest.mark.parametrize("ranks", [1, 2])
def test_a_clean_run_is_untouched_by_the_limits(tmp_path, ranks) -> None:
    run_dir = tmp_path / "run"
    record = run_attempt(spec(RunLimits(300, 300, 60), ranks), run_dir)
    assert (record["exit_code"], record["ended_by"], record["leftover_processes"]) == (0, "", 0)
    assert attempt_outcome(run_dir, record) == ("success", "")
    assert record["stack_dumps"] == [] and not list((run_dir / "attempt-1").glob("stack-*"))
