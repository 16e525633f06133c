"""The scheduler's own verdict on a job, for attempts that were killed from outside."""

from __future__ import annotations

import shutil
import subprocess

SLURM_FAILURE_STATES = {
    "CANCELLED": "cancelled",
    "TIMEOUT": "time_limit",
    "NODE_FAIL": "node_failure",
    "PREEMPTED": "preempted",
    "OUT_OF_MEMORY": "host_oom",
    "BOOT_FAIL": "boot_fail",
    "DEADLINE": "time_limit",
    "FAILED": "nonzero_exit",
}
"""Slurm job states that end a job badly, and the parser's reason for each."""


def _first_line(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def slurm_job_state(job_id: str) -> str | None:
    """The job's state word (e.g. ``CANCELLED``), from squeue while Slurm still lists the
    job (MinJobAge), else from sacct where accounting runs; None when neither knows."""
    state = _first_line(["squeue", "-h", "-j", job_id, "-t", "all", "-o", "%T"])
    if state is None:
        state = _first_line(["sacct", "-n", "-X", "-j", job_id, "-o", "State%30"])
    return state.split()[0].upper() if state else None
