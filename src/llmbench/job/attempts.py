"""Which runs the next invocation redoes, and records for attempts that were killed.

A run folder holds ``attempt-<n>/`` folders (never reused) and ``run.json``, the
reported attempt. Snakemake reruns a job when one of its params changes, so the train
rule carries a *retry token*, computed from the folder at DAG time without touching any
file (``snakemake -n`` shows exactly what would be redone: "params have changed"):

    token = attempts - attempts retried for an infrastructure failure
            - (1 if the reported attempt succeeded, or failed with ``keep_failed``)

It equals what the job last ran with exactly when nothing is to be redone: a success
keeps it, a reported failure raises it by one, and an attempt retried within the same
invocation (a node failure) does not count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.core.run_folder import LOG, attempt_name
from llmbench.core.run_folder import SUMMARY as SUMMARY_FILE
from llmbench.core.runspec import RunSpec
from llmbench.errors import LlmbenchError
from llmbench.files.atomic import write_json_atomic
from llmbench.job.outcome import run_outcome
from llmbench.job.run_record import parse_attempt_log
from llmbench.job.runner import (
    JOB_FILE,
    LAUNCH_FILE,
    RECORD_FILE,
    RECORD_SCHEMA_VERSION,
    attempt_numbers,
    run_attempt,
)
from llmbench.job.supervise import Ended
from llmbench.launch.slurm import SLURM_FAILURE_STATES, job_state
from llmbench.parsers import parse_log
from llmbench.parsers.vocabulary import Status
from llmbench.telemetry.sampling import TelemetrySettings

INFRA_REASONS = frozenset({"node_failure", "preempted", "boot_fail"})
"""Transient infrastructure failures: retried automatically, avoiding the failed nodes."""


class WorkflowLostError(LlmbenchError):
    """The Snakemake process running the train job is gone and the run was ended with it:
    nobody waits for the job's outputs (the attempt's record says what happened)."""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def reported_status(run_dir: Path) -> tuple[int, str] | None:
    """(attempt number, status) of the reported attempt, or None when there is none.

    The status is ``run_outcome`` of the parsed log's verdict when the run was parsed,
    else of the exit code alone (a killed or unparsed run is never taken for a success).
    """
    record = _read_json(run_dir / RECORD_FILE)
    if record is None:
        return None
    summary = _read_json(run_dir / SUMMARY_FILE)
    exit_code = record.get("exit_code")
    if summary is not None and summary.get("attempt", record["attempt"]) == record["attempt"]:
        log_status, log_reason = summary.get("status", "no_data"), summary.get("reason", "")
    else:
        log_status, log_reason = ("success" if exit_code == 0 else "failed"), ""
    status, _ = _judge(record, log_status, log_reason)
    return int(record["attempt"]), status


def _judge(record: Mapping[str, Any], log_status: str, log_reason: str) -> tuple[str, str]:
    return run_outcome(
        log_status,
        log_reason,
        record.get("exit_code"),
        record.get("failure_reason") or "",
        record.get("ended_by") or "",
    )


def retry_token(run_dir: str | Path, keep_failed: bool) -> int:
    """The train rule's retry param (see the module docstring)."""
    if not os.path.isdir(run_dir):
        # never started (no attempts, no record): one stat of a plain string, not a failed
        # listing and a failed open; the workflow asks this of every run at DAG time
        return 0
    run_dir = Path(run_dir)
    numbers = attempt_numbers(run_dir)
    retried = sum(
        1
        for n in numbers
        if (_read_json(run_dir / attempt_name(n) / RECORD_FILE) or {}).get("retried")
    )
    reported = reported_status(run_dir)
    fine = reported is not None and (reported[1] == "success" or keep_failed)
    return len(numbers) - retried - int(fine)


def unrecorded_attempt(run_dir: Path) -> tuple[int, Path] | None:
    """(number, folder) of the newest attempt when it has no record: it was killed before
    it could write one (Slurm time limit, scancel, node failure). None otherwise."""
    numbers = attempt_numbers(run_dir)
    if not numbers:
        return None
    folder = run_dir / attempt_name(numbers[-1])
    return None if (folder / RECORD_FILE).exists() else (numbers[-1], folder)


def killed_attempt_reason(attempt_dir: Path) -> tuple[str, str | None]:
    """(reason, scheduler state) for an attempt that ended without its own record: the
    scheduler's state when it still knows the job, else the log's failure markers."""
    job = _read_json(attempt_dir / JOB_FILE) or {}
    state = job_state(job["slurm_job_id"]) if job.get("slurm_job_id") else None
    if state in SLURM_FAILURE_STATES:
        return SLURM_FAILURE_STATES[state], state
    log = attempt_dir / LOG
    if log.exists():
        summary = parse_log(log).summary
        if summary.status == "failed" and summary.reason:
            return str(summary.reason), state
    return "killed", state


def nodes_to_avoid(run_dir: Path) -> str | None:
    """Nodes of the newest attempt when it was killed by an infrastructure failure, for
    ``--exclude`` on the retry (the plugin tracks failed nodes only where sacct works)."""
    killed = unrecorded_attempt(run_dir)
    if killed is None:
        return None
    last = killed[1]
    reason, _ = killed_attempt_reason(last)
    job = _read_json(last / JOB_FILE) or {}
    return job.get("nodelist") if reason in INFRA_REASONS else None


def run_or_salvage(
    spec: RunSpec,
    run_dir: Path,
    job_attempt: int,
    infra_retries: int,
    source_dir: Path | None = None,
    env: dict[str, str] | None = None,
    telemetry: TelemetrySettings | None = None,
) -> dict[str, Any]:
    """The train rule's body. ``job_attempt`` is Snakemake's try counter for this job in
    this invocation (the rule has ``infra_retries + 1`` retries). A retry runs training
    again only after a transient infrastructure failure, at most ``infra_retries`` times;
    after any other kill (scancel, time limit, ...) it records the killed attempt as the
    run's failed result, so the sweep's tables are still produced and the next invocation
    redoes the run. A run the watchdog ended as a ``hang`` before it finished is run again
    at once, up to ``infra_retries`` times (a hang is usually a transient distributed
    fault); a ``timeout`` is not (it would take as long again)."""
    killed = unrecorded_attempt(run_dir) if job_attempt > 1 else None
    if killed is not None:
        reason, state = killed_attempt_reason(killed[1])
        retry = reason in INFRA_REASONS and job_attempt - 1 <= infra_retries
        record = salvage_record(run_dir, spec.to_dict(), state, reason, retried=retry)
        if record is not None and not retry:
            return record  # the killed attempt is the run's result this time
    record = run_attempt(spec, run_dir, source_dir, env=env, telemetry=telemetry)
    for _ in range(infra_retries):
        # a platform launcher reports evictions and node losses itself: retried at once
        infra = record.get("failure_reason") in INFRA_REASONS
        if not infra and attempt_outcome(run_dir, record)[0] != Status.HANG.value:
            break
        mark_retried(run_dir, record)
        record = run_attempt(spec, run_dir, source_dir, env=env, telemetry=telemetry)
    return record


def train_job(
    run: Mapping[str, Any],
    record_path: str | Path,
    job_attempt: int,
    infra_retries: int,
    source_dir: Path | None = None,
) -> dict[str, Any]:
    """The train rule's run: ``run_or_salvage`` of ``run["spec"]`` (launch settings
    ``run["env"]``) in the folder of ``record_path``, where the reported attempt's record
    is then written atomically; returns that record. The rule's other outputs come from
    ``llmbench.job.train_outputs.write_train_outputs``: apart, because they need numpy,
    pandas and pyarrow, which the job loads only once its ranks have run."""
    record_path = Path(record_path)
    record = run_or_salvage(
        RunSpec.from_dict(run["spec"]),
        record_path.parent,
        job_attempt,
        infra_retries,
        source_dir=source_dir,
        env=run["env"],
        telemetry=TelemetrySettings.from_config(run["telemetry"]),
    )
    if record.get("ended_by") == Ended.WORKFLOW_LOST:
        # No run.json: the next invocation finds the run not done and redoes it.
        raise WorkflowLostError(
            f"{record_path.parent.name}: the workflow process running this job is gone; "
            f"{record['attempt_dir']} was ended with it (its run.json says so)"
        )
    write_json_atomic(record_path, record)
    return record


def attempt_outcome(run_dir: Path, record: Mapping[str, Any]) -> tuple[str, str]:
    """(status, reason) of one attempt: ``run_outcome`` of its log and its ending."""
    summary = parse_attempt_log(run_dir, record).summary
    return _judge(record, summary.status, summary.reason)


def mark_retried(run_dir: Path, record: dict[str, Any]) -> None:
    """Note in the attempt's record that it was retried within this invocation (the retry
    token does not count it)."""
    record["retried"] = True
    write_json_atomic(run_dir / record["attempt_dir"] / RECORD_FILE, record)


def salvage_record(
    run_dir: Path,
    spec: Mapping[str, Any],
    scheduler_state: str | None = None,
    reason: str = "killed",
    retried: bool = False,
) -> dict[str, Any] | None:
    """A record for the newest attempt that was killed before it could write one (Slurm
    time limit, scancel, node failure): status comes from its log and the scheduler's
    state. Returns None when the newest attempt has a record or there is no attempt."""
    killed = unrecorded_attempt(run_dir)
    if killed is None:
        return None
    number, attempt_dir = killed
    stamp = datetime.fromtimestamp(attempt_dir.stat().st_mtime, timezone.utc)
    log = attempt_dir / LOG
    finished = datetime.fromtimestamp(log.stat().st_mtime, timezone.utc) if log.exists() else stamp
    record = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "run_id": spec["run_id"],
        "attempt": number,
        "attempt_dir": attempt_dir.name,
        "log": f"{attempt_dir.name}/{LOG}",
        "launch_script": f"{attempt_dir.name}/{LAUNCH_FILE}",
        "started_at": stamp.isoformat(timespec="milliseconds"),
        "finished_at": finished.isoformat(timespec="milliseconds"),
        "exit_code": None,
        "killed": True,
        "scheduler_state": scheduler_state,
        "failure_reason": reason,
        "retried": retried,
        "spec": dict(spec),
        "provenance": {},
    }
    write_json_atomic(attempt_dir / RECORD_FILE, record)
    return record


def attempt_history(run_dir: Path) -> tuple[int, str]:
    """(number of attempts, ``"1:node_failure; 2:cuda_oom"`` for the attempts before the
    reported one), for the runs table."""
    numbers = attempt_numbers(run_dir)
    reported = (_read_json(run_dir / RECORD_FILE) or {}).get("attempt")
    earlier = []
    for n in numbers:
        if n == reported:
            continue
        record = _read_json(run_dir / attempt_name(n) / RECORD_FILE)
        if record is None:  # ended without a record, and no retry wrote one
            outcome = "killed"
        else:  # a killed attempt's salvaged record has its reason; a lost log is one
            status, reason = attempt_outcome(run_dir, record)
            outcome = reason or status
        earlier.append(f"{n}:{outcome}")
    return len(numbers), "; ".join(earlier)
