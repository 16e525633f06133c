"""Running one attempt of a run: its own folder, launch script, log and record.

Every attempt gets a fresh ``attempt-<n>`` folder that is never reused, so a rerun never
overwrites what an earlier attempt left. ``run.json`` beside the attempts names the
reported attempt.

An attempt never runs beside an earlier attempt of its own run: processes of one still
alive on this host (after a killed Snakemake, say) are ended before it starts and named in
its record (``ended_before_start``). Processes of the sweep's other runs alive on this host
when it starts or ends are named in ``overlap``: where the ranks run on this host they
shared its cores with the measurement (``llmbench.job.sweep_processes`` finds them).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from llmbench.core.devices import device
from llmbench.core.launchers import is_platform, launcher_traits
from llmbench.core.run_folder import ATTEMPT_PREFIX, attempt_name
from llmbench.core.run_folder import JOB as JOB_FILE
from llmbench.core.run_folder import LAUNCH as LAUNCH_FILE
from llmbench.core.run_folder import RECORD as RECORD_FILE
from llmbench.core.runspec import RunSpec
from llmbench.errors import ParseError
from llmbench.files.atomic import write_json_atomic
from llmbench.job import provenance
from llmbench.job.supervise import end_processes, supervise
from llmbench.job.sweep_processes import (
    AttemptProcess,
    attempt_mark,
    sweep_processes,
    workflow_process,
)
from llmbench.launch.launchers import launcher_for, render_launch_script
from llmbench.launch.script import LOG_FILE, SPEC_FILE
from llmbench.launch.slurm import job_nodelist
from llmbench.parsers import parse_log
from llmbench.telemetry.sampling import TelemetrySettings, sampling

RECORD_SCHEMA_VERSION = "1.0.0"
"""The run record's schema (``core/schemas/run.schema.json``, docs/results.md)."""


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
        path = run_dir / attempt_name(number)
        try:
            path.mkdir()
            return number, path
        except FileExistsError:
            number += 1


def write_launch_files(spec: RunSpec, folder: Path, attempt: int) -> list[str]:
    """What an attempt runs, written into ``folder``: ``run_spec.json``, ``launch.sh`` and
    the platform's files (manifest, payload). Returns the file names, in that order.
    ``llmbench render`` writes the same files without running anything."""
    launcher = launcher_for(spec)
    files = {SPEC_FILE: spec.to_json() + "\n", LAUNCH_FILE: render_launch_script(spec)}
    files.update(launcher.files(spec, attempt))
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / LAUNCH_FILE).chmod(0o755)
    return list(files)


def _has_steps(log: Path) -> bool:
    """The log shows a training step: the watchdog's startup allowance is over. A log
    deleted mid-run shows none (its growth is still watched)."""
    try:
        return parse_log(log).summary.n_iterations > 0
    except ParseError:
        return False


def _ranks_here(attempt_dir: Path) -> bool:
    """The attempt's ranks run on this host (not a platform's pods): it takes its cores."""
    try:
        launcher = json.loads((attempt_dir / SPEC_FILE).read_text())["launcher"]
    except (OSError, ValueError, KeyError, TypeError):
        return True  # unknown: counted, an overlap is never hidden
    return not is_platform(launcher)


def end_earlier_attempts(
    run_dir: Path, attempt_dir: Path
) -> tuple[list[dict[str, object]], list[AttemptProcess]]:
    """End the processes of the run's earlier attempts still alive on this host. Returns
    those ended (for the record) and the sweep's other live processes: other runs', and
    any of this run's that survived SIGKILL."""
    runs_root = run_dir.parent
    alive = sweep_processes(runs_root, exclude=attempt_dir)
    own_run = run_dir.resolve()
    earlier = [p for p in alive if p.attempt_dir.parent == own_run]
    others = [p for p in alive if p.attempt_dir.parent != own_run]
    if not earlier:
        return [], others
    shown = ", ".join(f"pid {p.pid} ({p.command[:60]})" for p in earlier)
    print(
        f"llmbench: warning: {run_dir.name}: ending {len(earlier)} processes of an earlier "
        f"attempt before {attempt_dir.name} starts: {shown}",
        file=sys.stderr,
    )
    survivors = set(end_processes(p.process for p in earlier))
    ended = [p.describe(runs_root) for p in earlier if p.pid not in survivors]
    return ended, others + [p for p in earlier if p.pid in survivors]


def overlap(
    spec: RunSpec, runs_root: Path, seen: Sequence[AttemptProcess], when: str
) -> list[dict[str, object]]:
    """The sweep's processes ``seen`` that share this host's cores with the attempt's
    ranks, tagged ``when`` (``start``, ``end``): none for a platform's run."""
    if launcher_traits(spec.launcher).platform:
        return []
    here = {folder: _ranks_here(folder) for folder in {p.attempt_dir for p in seen}}
    return [{**p.describe(runs_root), "when": when} for p in seen if here[p.attempt_dir]]


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
    ``telemetry`` samples this node beside the run (``llmbench.telemetry.sampling``)."""
    number, attempt_dir = new_attempt_dir(run_dir)
    ended_before, others = end_earlier_attempts(run_dir, attempt_dir)
    # Written first, so an attempt killed from outside can still be traced to its job.
    job_id = os.environ.get("SLURM_JOB_ID")
    write_json_atomic(
        attempt_dir / JOB_FILE,
        {"slurm_job_id": job_id, "nodelist": job_nodelist(job_id), "started_at": _now()},
    )
    write_launch_files(spec, attempt_dir, number)
    launch = attempt_dir / LAUNCH_FILE
    launch_env = {
        **os.environ,
        "LLMBENCH_PYTHON": sys.executable,  # the stage venv's, when ``env`` names it
        **(env or {}),
        "LLMBENCH_ATTEMPT": str(number),
        "PYTHONUNBUFFERED": "1",
        **attempt_mark(attempt_dir),
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
    launcher = launcher_for(spec)
    own_sampler = telemetry if launcher.runner_samples(spec) else None
    shared = overlap(spec, run_dir.parent, others, "start")
    sampler_env = {**os.environ, **attempt_mark(attempt_dir)}
    with sampling(attempt_dir, own_sampler, gpu=device(spec.gpu_type).nvidia_smi, env=sampler_env):
        outcome = supervise(
            ["bash", str(launch)],
            attempt_dir / LOG_FILE,
            spec.limits,
            env=launch_env,
            has_started=_has_steps,
            outside_pids=launcher.outside_pids(job_id),
            workflow=workflow_process(),
        )
    after = sweep_processes(run_dir.parent, exclude=attempt_dir)
    shared += overlap(spec, run_dir.parent, after, "end")
    record = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "run_id": spec.run_id,
        "attempt": number,
        "attempt_dir": attempt_dir.name,
        "log": f"{attempt_dir.name}/{LOG_FILE}",
        "launch_script": f"{attempt_dir.name}/{LAUNCH_FILE}",
        "started_at": started,
        "finished_at": _now(),
        "exit_code": outcome.exit_code,
        "ended_by": outcome.ended_by,
        "end_detail": outcome.detail,
        "stack_dumps": [f"{attempt_dir.name}/{name}" for name in outcome.stack_dumps],
        "leftover_processes": outcome.leftover_processes,
        "ended_before_start": ended_before,
        "overlap": shared,
        "spec": spec.to_dict(),
        "provenance": provenance.collect(source_dir),
        **launcher.outcome(attempt_dir, job_id),
    }
    write_json_atomic(attempt_dir / RECORD_FILE, record)
    return record
