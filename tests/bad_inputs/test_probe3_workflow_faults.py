"""The third bad-input probe's workflow faults that need no sweep: a finished attempt whose
log was deleted (WF5), a sweep and a job on a full disk (WF4a, WF4b). The sweeps with a
killed Snakemake and a deleted log are in tests/workflow/test_lost_workflow.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.files.atomic import write_json_atomic
from llmbench.job.attempts import attempt_history
from llmbench.job.runner import new_attempt_dir
from tests.bad_inputs.checks import one_error_line
from tests.helpers import REPO, tiny_config, write_config


def test_a_finished_attempt_whose_log_was_deleted_is_not_called_killed(tmp_path: Path) -> None:
    """WF5: the runs table called a finished attempt without its log `killed`."""
    run = tmp_path / "runs" / "r"
    number, folder = new_attempt_dir(run)
    spec = {"window": [35, 44], "steps": 50}
    record = {"run_id": "r", "attempt": number, "attempt_dir": folder.name,
              "log": f"{folder.name}/train.log", "exit_code": 0, "spec": spec}  # fmt: skip
    write_json_atomic(folder / "run.json", record)  # finished; its log never written or gone
    new_attempt_dir(run)  # the next attempt, reported
    write_json_atomic(run / "run.json", {**record, "attempt": 2})
    assert attempt_history(run) == (2, "1:log_missing")


# --- a full disk (WF4a): a real filesystem with no space left, made in a namespace ---

UNSHARE = shutil.which("unshare")


def _namespaces_work() -> bool:
    if UNSHARE is None:
        return False
    probe = [UNSHARE, "--user", "--map-root-user", "--mount", "true"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


on_a_full_disk = pytest.mark.prerequisite(
    _namespaces_work(), "needs unshare with user and mount namespaces (a private tmpfs)"
)


def run_on_full_disk(folder: Path, command: list[str], seed: Path | None = None):
    """``command`` in ``folder/work``, ``folder`` a fresh 4 MiB tmpfs filled to the last
    byte after ``seed``'s files were copied into ``work`` (in a private mount namespace:
    nothing is mounted for anyone else, nothing needs root)."""
    script = (
        'mount -t tmpfs -o size=4m tmpfs "$1" && mkdir -p "$1/work" && '
        ': > "$1/work/job.log" && '  # made before the disk fills, as a job's log is
        '{ [ -z "$2" ] || cp -r "$2/." "$1/work/"; } && '
        '{ cat /dev/zero > "$1/filler" 2>/dev/null; true; } && '
        'cd "$1/work" && shift 2 && exec "$@"'
    )
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [UNSHARE, "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh",
         str(folder), str(seed or ""), *command],
        capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
    )  # fmt: skip


@on_a_full_disk
def test_a_sweep_on_a_full_disk_stops_in_one_line_naming_the_folder(tmp_path: Path) -> None:
    """The workflow stops while it is read, before Snakemake writes its lock or logs a
    line: after that, Snakemake itself fails in 160 lines of logging and lock tracebacks."""
    seed = tmp_path / "seed"
    seed.mkdir()
    write_config(seed, tiny_config(scales=(1,)))
    disk = tmp_path / "disk"
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(disk / "work"), "--cores", "1",
    ]  # fmt: skip
    proc = run_on_full_disk(disk, command, seed)
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("llmbench")]
    assert proc.returncode != 0
    assert len(ours) == 1, proc.stderr[-3000:]
    assert f"{disk / 'work'}: 0 bytes free on its filesystem" in ours[0], ours
    assert "at least 64 MiB" in ours[0]
    assert "Traceback" not in proc.stderr and "Logging error" not in proc.stderr


@on_a_full_disk
def test_a_job_that_runs_out_of_space_says_where_in_one_line(tmp_path: Path) -> None:
    """WF4b: a job on a full disk died with exit status 120 and an empty log."""
    disk = tmp_path / "disk"
    job = (
        "import sys; from llmbench.files.job_log import job_log; "
        "from llmbench.files.atomic import write_json_atomic; "
        "job_log('job.log', ['out.json']); "
        "print('a line for the log', file=sys.stderr); "
        "write_json_atomic('out.json', {'x': 'y' * 100000})"
    )
    proc = run_on_full_disk(disk, [sys.executable, "-c", job])
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_error_line(proc.stderr, "no space left on device writing out.json")
    assert "(0 bytes free there)" in line
    assert "Exception ignored" not in proc.stderr
