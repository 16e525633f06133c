"""Which runs the next invocation redoes, and records for attempts that were killed.

A run folder holds ``attempt-<n>/`` folders (never reused) and ``run.json``, the
reported attempt. Snakemake reruns a job when one of its params changes, so the train
rule carries a *retry token*: the number of the failed attempt being retried. It is
computed from the folder at DAG time, without touching any file, so ``snakemake -n``
shows exactly what would be redone and why ("params have changed"):

- no reported attempt yet: the highest attempt number present (0 when none);
- reported attempt ``n`` succeeded, or failed with ``keep_failed``: ``n - 1`` (what the
  job ran with, so nothing is redone);
- reported attempt ``n`` did not succeed: ``n`` (a new value, so the run is redone).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.runner import RECORD_FILE, attempt_numbers

SUMMARY_FILE = "summary.json"
INFRA_REASONS = frozenset({"node_failure", "preempted", "boot_fail"})
"""Transient infrastructure failures: retried automatically, avoiding the failed nodes."""


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def reported_status(run_dir: Path) -> tuple[int, str] | None:
    """(attempt number, status) of the reported attempt, or None when there is none.

    The status is the parsed log's verdict when the run was parsed, else judged from the
    exit code alone (a killed or unparsed run is never taken for a success).
    """
    record = _read_json(run_dir / RECORD_FILE)
    if record is None:
        return None
    summary = _read_json(run_dir / SUMMARY_FILE)
    exit_code = record.get("exit_code")
    if summary is not None and summary.get("attempt", record["attempt"]) == record["attempt"]:
        status = summary.get("status", "no_data")
        if exit_code not in (0, None) and status == "success":
            status = "failed"
    else:
        status = "success" if exit_code == 0 else "failed"
    return int(record["attempt"]), status


def retry_token(run_dir: Path, keep_failed: bool) -> int:
    """The train rule's retry param (see the module docstring)."""
    reported = reported_status(run_dir)
    if reported is None:
        return (attempt_numbers(run_dir) or [0])[-1]
    attempt, status = reported
    if status == "success" or keep_failed:
        return attempt - 1
    return attempt


def salvage_record(
    run_dir: Path, spec: Mapping[str, Any], scheduler_state: str | None = None
) -> dict[str, Any] | None:
    """A record for the newest attempt that was killed before it could write one (Slurm
    time limit, scancel, node failure): status comes from its log and the scheduler's
    state. Returns None when the newest attempt has a record or there is no attempt."""
    numbers = attempt_numbers(run_dir)
    if not numbers:
        return None
    attempt_dir = run_dir / f"attempt-{numbers[-1]}"
    if (attempt_dir / RECORD_FILE).exists():
        return None
    stamp = datetime.fromtimestamp(attempt_dir.stat().st_mtime, timezone.utc)
    log = attempt_dir / "train.log"
    finished = datetime.fromtimestamp(log.stat().st_mtime, timezone.utc) if log.exists() else stamp
    return {
        "run_id": spec["run_id"],
        "attempt": numbers[-1],
        "attempt_dir": attempt_dir.name,
        "log": f"{attempt_dir.name}/train.log",
        "launch_script": f"{attempt_dir.name}/launch.sh",
        "started_at": stamp.isoformat(timespec="milliseconds"),
        "finished_at": finished.isoformat(timespec="milliseconds"),
        "exit_code": None,
        "killed": True,
        "scheduler_state": scheduler_state,
        "spec": dict(spec),
        "provenance": {},
    }
