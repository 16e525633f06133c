"""The sweep's processes on real processes: marks found by attempt, the workflow process
found only among a job's ancestors, an earlier attempt's processes ended before the next
starts."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from llmbench.aggregate.runs_and_steps import overlap_text
from llmbench.job.runner import end_earlier_attempts, new_attempt_dir, overlap
from llmbench.job.sweep_processes import (
    ATTEMPT_ENV,
    WORKFLOW_ENV,
    attempt_mark,
    sweep_processes,
)
from tests.job.test_supervise import assert_all_gone
from tests.launch.cases import embedded_spec


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    """Processes a test starts; every one is ended at the end, by PID."""
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def marked_sleep(started: list, attempt_dir: Path) -> subprocess.Popen:
    """A process carrying ``attempt_dir``'s mark, in a session of its own (as a rank is)."""
    proc = subprocess.Popen(
        ["sleep", "300"], env={**os.environ, **attempt_mark(attempt_dir)}, start_new_session=True
    )
    started.append(proc)
    # Popen returns once exec has begun, but the kernel shows the new environment (where
    # the mark is) only when the program is loaded: under load, a scan right after Popen
    # could read it empty.
    deadline = time.monotonic() + 30
    while ATTEMPT_ENV not in psutil.Process(proc.pid).environ():
        assert time.monotonic() < deadline, "the marked process never showed its mark"
        time.sleep(0.01)
    return proc


def test_marks_are_found_by_their_sweep(tmp_path: Path, started: list) -> None:
    runs = tmp_path / "results" / "runs"
    mine = marked_sleep(started, runs / "a" / "attempt-1")
    other_run = marked_sleep(started, runs / "b" / "attempt-3")
    marked_sleep(started, tmp_path / "elsewhere" / "runs" / "a" / "attempt-1")
    found = {p.pid: p for p in sweep_processes(runs)}
    assert set(found) == {mine.pid, other_run.pid}
    assert found[mine.pid].describe(runs) == {
        "pid": mine.pid, "command": "sleep 300", "attempt": "a/attempt-1"
    }  # fmt: skip
    excluded = sweep_processes(runs, exclude=runs / "a" / "attempt-1")
    assert [p.pid for p in excluded] == [other_run.pid]


def test_an_earlier_attempt_is_ended_before_the_next_starts(tmp_path: Path, started: list) -> None:
    runs = tmp_path / "results" / "runs"
    run = runs / "a"
    _, first = new_attempt_dir(run)
    orphans = [marked_sleep(started, first) for _ in range(2)]
    neighbour = marked_sleep(started, runs / "b" / "attempt-1")
    _, second = new_attempt_dir(run)
    ended, others = end_earlier_attempts(run, second)
    assert sorted(p["pid"] for p in ended) == sorted(p.pid for p in orphans)
    assert {p["attempt"] for p in ended} == {"a/attempt-1"}
    assert_all_gone([p.pid for p in orphans])
    # another run's process is not this run's to end: it is reported, and left running
    assert [p.pid for p in others] == [neighbour.pid] and neighbour.poll() is None


def test_other_runs_overlap_only_where_ranks_share_the_host(tmp_path: Path, started: list) -> None:
    """A pod's run measures elsewhere: neither its poller nor a poller beside a local run
    is an overlap; a local run beside a local run is."""
    runs = tmp_path / "results" / "runs"
    for run, launcher in (("local-run", "local"), ("pod-run", "kubernetes")):
        _, folder = new_attempt_dir(runs / run)
        (folder / "run_spec.json").write_text(json.dumps({"launcher": launcher}))
        marked_sleep(started, folder)
    seen = sweep_processes(runs)
    local = embedded_spec("local")
    (entry,) = overlap(local, runs, seen, "start")
    assert entry["attempt"] == "local-run/attempt-1" and entry["when"] == "start"
    assert entry["command"] == "sleep 300"
    assert overlap(dataclasses.replace(local, launcher="kubernetes"), runs, seen, "end") == []


def test_the_runs_table_names_each_overlapping_attempt_once() -> None:
    seen = [("b/attempt-1", "start"), ("b/attempt-1", "start"), ("b/attempt-1", "end"),
            ("c/attempt-2", "end")]  # fmt: skip
    text = overlap_text([{"pid": 1, "attempt": a, "when": w} for a, w in seen])
    assert (
        text == "b/attempt-1: 2 processes at start, 1 process at end; c/attempt-2: 1 process at end"
    )
    assert overlap_text([]) == ""


WORKFLOW = """
import os, subprocess, sys
from llmbench.job.sweep_processes import mark_workflow_process
mark_workflow_process(os.environ)
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
sys.exit(child.wait())
"""
ASK = """
import json, os, sys
from llmbench.job.sweep_processes import WORKFLOW_ENV, workflow_process
env = dict(os.environ)
if len(sys.argv) > 1:
    env[WORKFLOW_ENV] = sys.argv[1]
found = workflow_process(env)
value, parent = os.environ[WORKFLOW_ENV], os.getppid()
print(json.dumps({"found": found.pid if found else None, "value": value, "parent": parent}))
"""


def ask(*value: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", WORKFLOW, ASK, *value], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def test_the_workflow_process_is_an_ancestor_with_its_start_time() -> None:
    answer = ask()
    pid, start = answer["value"].split(":")
    assert answer["found"] == int(pid) == answer["parent"]
    # the same PID with another start time (a reused PID) is not it
    assert ask(f"{pid}:{float(start) - 10:.2f}")["found"] is None


def test_a_process_that_is_no_ancestor_is_not_the_workflow(started: list) -> None:
    """A job Snakemake submitted elsewhere inherits the submitting host's value: it names
    no ancestor there, and nothing is watched."""
    stranger = subprocess.Popen(["sleep", "300"])
    started.append(stranger)
    start = psutil.Process(stranger.pid).create_time()
    assert ask(f"{stranger.pid}:{start:.2f}")["found"] is None
    assert ask("not a process")["found"] is None
    assert WORKFLOW_ENV not in os.environ and ATTEMPT_ENV not in os.environ
