"""The processes of a sweep on this host: the Snakemake process that runs its jobs, and
every process an attempt started, found by the mark it carries.

Every process of an attempt (the launch script, torchrun, the ranks, the runner's
sampler) inherits ``LLMBENCH_ATTEMPT_DIR``, the attempt folder's absolute path: a mark in
the environment survives the sessions torchrun starts its ranks in and the death of the
supervisor that started them, where a process tree or a process group does not. A new
attempt looks for marks under its sweep's ``results/runs`` before it starts and after it
ends (``llmbench.job.runner``).

The Snakemake process that runs a local sweep's jobs puts its identity in
``LLMBENCH_WORKFLOW`` (``<pid>:<start time>``) when it reads the workflow; a train job
whose supervisor finds that process among its ancestors ends its run when that process is
gone (``llmbench.job.supervise``). A job Snakemake submitted to Slurm does not find it (the
value names a process on the submitting host): Slurm ends the processes of a job itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

import psutil

ATTEMPT_ENV = "LLMBENCH_ATTEMPT_DIR"
WORKFLOW_ENV = "LLMBENCH_WORKFLOW"
COMMAND_CHARS = 120
_START_TOLERANCE_S = 0.05  # the start time is written with two decimals


@dataclass(frozen=True)
class AttemptProcess:
    """A live process that carries an attempt's mark."""

    pid: int
    command: str  # cut to COMMAND_CHARS characters
    attempt_dir: Path
    process: psutil.Process  # keeps the start time: a reused PID is never taken for it

    def describe(self, runs_root: Path) -> dict[str, object]:
        """For run.json: pid, command and the attempt as ``<run>/attempt-<n>``."""
        try:
            attempt = self.attempt_dir.relative_to(runs_root.resolve()).as_posix()
        except ValueError:
            attempt = str(self.attempt_dir)
        return {"pid": self.pid, "command": self.command, "attempt": attempt}


def attempt_mark(attempt_dir: Path) -> dict[str, str]:
    """The environment entry every process of the attempt inherits."""
    return {ATTEMPT_ENV: str(attempt_dir.resolve())}


def sweep_processes(runs_root: Path, exclude: Path | None = None) -> list[AttemptProcess]:
    """Live processes of this host whose mark names an attempt folder under ``runs_root``
    (but not ``exclude``), by PID. Processes that cannot be read (another user's) are not
    this sweep's: the sweep's processes run as the user who runs the sweep."""
    root = runs_root.resolve()
    skip = str(exclude.resolve()) if exclude is not None else None
    found = []
    for proc in psutil.process_iter():
        try:
            mark = proc.environ().get(ATTEMPT_ENV)
            if not mark or mark == skip or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            attempt_dir = Path(mark)
            if attempt_dir.parent.parent != root:
                continue
            command = " ".join(proc.cmdline())
        except psutil.Error:  # gone meanwhile, or not ours to read
            continue
        found.append(AttemptProcess(proc.pid, command[:COMMAND_CHARS], attempt_dir, proc))
    return found


def mark_workflow_process(environ: MutableMapping[str, str]) -> None:
    """Name this process as the one that runs the workflow's jobs (called by the
    Snakemake process that reads the workflow, before it starts any job)."""
    me = psutil.Process()
    environ[WORKFLOW_ENV] = f"{me.pid}:{me.create_time():.2f}"


def workflow_process(environ: Mapping[str, str] = os.environ) -> psutil.Process | None:
    """The process ``mark_workflow_process`` named, when it is an ancestor of this one
    and the same process (its start time); None otherwise (outside a workflow, in a job
    Snakemake submitted elsewhere)."""
    pid_text, _, start_text = environ.get(WORKFLOW_ENV, "").partition(":")
    try:
        pid, start = int(pid_text), float(start_text)
        ancestors = psutil.Process().parents()
    except (ValueError, psutil.Error):
        return None
    for proc in ancestors:
        try:
            if proc.pid == pid and abs(proc.create_time() - start) < _START_TOLERANCE_S:
                return proc
        except psutil.Error:
            return None
    return None
