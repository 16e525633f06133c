"""The fourth bad-input probe's workflow faults with a line better than Snakemake's own:
a results folder that cannot be written (WF8) stops a sweep that has jobs to run in one
line before its first job, where Snakemake gave a 3-line WorkflowError; a finished sweep
on a read-only folder still has nothing to do (WF8b), and one whose config adds a run
(WF8c) stops with its results intact (Snakemake finds the write-protected outputs while it
builds the DAG, before any hook of the workflow runs, and says so itself). Each runs the
real workflow with ``results/`` a read-only mount in a private mount namespace (nothing
is mounted for anyone else, nothing needs root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bad_inputs.checks import one_error_line
from tests.bad_inputs.test_probe3_workflow_faults import on_a_full_disk
from tests.helpers import REPO, snakemake, tiny_config, write_config

UNSHARE = shutil.which("unshare")
READ_ONLY = {
    "empty": "mount -t tmpfs -o size=100m,ro tmpfs results",
    "bind": "mount --bind results results && mount -o remount,bind,ro results",
}
"""``results`` made read-only: an empty read-only file system, or the folder itself."""


def run_read_only(work: Path, how: str) -> subprocess.CompletedProcess[str]:
    """``snakemake --cores 1`` in ``work`` with its results/ read-only (``READ_ONLY``)."""
    (work / "results").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
               "--cores", "1"]  # fmt: skip
    script = f'{READ_ONLY[how]} && exec "$@"'
    assert UNSHARE is not None
    return subprocess.run(
        [UNSHARE, "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", *command],
        cwd=work, capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
    )  # fmt: skip


@pytest.mark.workflow
@on_a_full_disk
def test_wf8_a_read_only_results_folder_is_one_line(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_config((1,)))
    proc = run_read_only(tmp_path, "empty")
    assert proc.returncode == 1
    ours = [line for line in proc.stderr.splitlines() if line.startswith("llmbench")]
    assert len(ours) == 1, proc.stderr[-3000:]
    one_error_line(ours[0], "results: cannot be written (a read-only file system",
                   "allowed: a folder this user can write", prefix="llmbench: error: ")  # fmt: skip
    assert "WorkflowError" not in proc.stderr and "Traceback" not in proc.stderr
    assert not list((tmp_path / "results").iterdir())


@pytest.mark.workflow
@on_a_full_disk
def test_wf8b_wf8c_a_finished_sweep_on_a_read_only_folder(tmp_path: Path) -> None:
    """WF8b: nothing to do, exit 0 (the check runs only when jobs are to run); WF8c: the
    config adds a run: refused (Snakemake's ProtectedOutputException), results intact."""
    write_config(tmp_path, tiny_config((1,)))
    done = snakemake(tmp_path, "--cores", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    before = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    same = run_read_only(tmp_path, "bind")
    assert same.returncode == 0 and "Nothing to be done" in same.stdout + same.stderr
    write_config(tmp_path, tiny_config((1, 2)))
    more = run_read_only(tmp_path, "bind")
    assert more.returncode == 1 and "Traceback" not in more.stderr, more.stderr[-3000:]
    after = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file()}
    assert after == before
