"""Running one attempt of a run: its own folder, launch script, log and record.

Every attempt gets a fresh ``attempt-<n>`` folder that is never reused, so a rerun never
overwrites what an earlier attempt left. ``run.json`` beside the attempts names the
reported attempt.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench import provenance
from llmbench.atomic import write_json_atomic
from llmbench.launch.platforms import platform_files, platform_outcome
from llmbench.launch.script import LOG_FILE, SPEC_FILE, render_launch_script
from llmbench.parsers import parse_log
from llmbench.runspec import RunSpec
from llmbench.slurm import job_nodelist, step_task_pids
from llmbench.supervise import supervise
from llmbench.telemetry.run import TelemetrySettings, runner_samples, sampling

ATTEMPT_PREFIX = "attempt-"
RECORD_FILE = "run.json"
JOB_FILE = "job.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def attempt_numbers(run_dir: Path) -> list[int]:
    # one directory listing, no glob: the workflow asks this of every run at DAG time
    try:
        names = [entry.name for entry in os.scandir(run_dir)]
    except OSError:  # no folder yet (a run never started), or not readable
        return []
    numbers = []
    for name in names:
        suffix = name[len(ATTEMPT_PREFIX) :]
        if name.startswith(ATTEMPT_PREFIX) and suffix.isdigit():
            numbers.append(int(suffix))
    return sorted(numbers)


def new_attempt_dir(run_dir: Path) -> tuple[int, Path]:
    """Create the next ``attempt-<n>`` folder; ``mkdir`` without ``exist_ok`` makes the
    claim atomic, so two writers can never share one."""
    run_dir.mkdir(parents=True, exist_ok=True)
    number = (attempt_numbers(run_dir) or [0])[-1] + 1
    while True:
        path = run_dir / f"{ATTEMPT_PREFIX}{number}"
        try:
            path.mkdir()
            return number, path
        except FileExistsError:
            number += 1


def _step_tasks(job_id: str | None) -> Callable[[], list[int]] | None:
    """The ranks srun starts under slurmstepd, for the supervisor (None outside a job)."""
    return (lambda: step_task_pids(job_id)) if job_id else None


def _has_steps(log: Path) -> bool:
    """The log shows a training step: the watchdog's startup allowance is over."""
    return parse_log(log).summary.n_iterations > 0


def run_attempt(
    spec: RunSpec,
    run_dir: Path,
    source_dir: Path | None = None,
    env: dict[str, str] | None = None,
    telemetry: TelemetrySettings | None = None,
) -> dict[str, Any]:
    """Render, run and record one attempt; returns the record also written to the
    attempt folder. A failing training run is a result, not an exception. ``env`` adds
    launch settings (stage path, master address) to the environment of ``launch.sh``;
    ``telemetry`` samples this node beside the run (``llmbench.telemetry.run``)."""
    number, attempt_dir = new_attempt_dir(run_dir)
    # Written first, so an attempt killed from outside can still be traced to its job.
    job_id = os.environ.get("SLURM_JOB_ID")
    write_json_atomic(
        attempt_dir / JOB_FILE,
        {"slurm_job_id": job_id, "nodelist": job_nodelist(job_id), "started_at": _now()},
    )
    (attempt_dir / SPEC_FILE).write_text(spec.to_json() + "\n")
    launch = attempt_dir / "launch.sh"
    launch.write_text(render_launch_script(spec))
    launch.chmod(0o755)
    for name, text in platform_files(spec, number).items():
        (attempt_dir / name).write_text(text)
    launch_env = {
        **os.environ,
        "LLMBENCH_PYTHON": sys.executable,  # the stage venv's, when ``env`` names it
        **(env or {}),
        "LLMBENCH_ATTEMPT": str(number),
        "PYTHONUNBUFFERED": "1",
    }
    if env and "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
        launch_env["PYTHONPATH"] = f"{env['PYTHONPATH']}{os.pathsep}{os.environ['PYTHONPATH']}"
    if telemetry is not None and telemetry.enabled:
        # The trainer writes its step clock; a launch script's own samplers read the rest.
        launch_env.update(
            LLMBENCH_TELEMETRY="1",
            LLMBENCH_TELEMETRY_PERIOD_MS=str(telemetry.period_ms),
            LLMBENCH_TELEMETRY_ROOT=telemetry.root,
        )
    started = _now()
    own_sampler = telemetry if runner_samples(spec.to_dict()) else None
    with sampling(attempt_dir, own_sampler, gpu=spec.gpu_type != "cpu"):
        outcome = supervise(
            ["bash", str(launch)],
            attempt_dir / LOG_FILE,
            spec.limits,
            env=launch_env,
            has_started=_has_steps,
            outside_pids=_step_tasks(job_id) if spec.launcher == "srun" else None,
        )
    record = {
        "run_id": spec.run_id,
        "attempt": number,
        "attempt_dir": attempt_dir.name,
        "log": f"{attempt_dir.name}/{LOG_FILE}",
        "launch_script": f"{attempt_dir.name}/launch.sh",
        "started_at": started,
        "finished_at": _now(),
        "exit_code": outcome.exit_code,
        "ended_by": outcome.ended_by,
        "end_detail": outcome.detail,
        "stack_dumps": [f"{attempt_dir.name}/{name}" for name in outcome.stack_dumps],
        "leftover_processes": outcome.leftover_processes,
        "spec": spec.to_dict(),
        "provenance": provenance.collect(source_dir),
        **platform_outcome(spec, attempt_dir, job_id),
    }
    write_json_atomic(attempt_dir / RECORD_FILE, record)
    return record
