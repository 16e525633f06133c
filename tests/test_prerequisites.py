"""Test infrastructure: a missing prerequisite of an optional test group is skipped
locally and a failure under CI; the xdist groups of CI match the tests' fixtures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.plugins.ci_schedule import (
    LONGEST_SCOPES,
    SHARED_SWEEP_FILES,
    SLURM_SCOPES,
    queue_rank,
    xdist_scope,
)

TESTS = """
import pytest

@pytest.mark.prerequisite(False, "the frobnicator is not installed")
def test_needs_missing():
    pass

@pytest.mark.prerequisite(True, "present")
def test_needs_present():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "outcome", "rc"), [("", "1 passed, 1 skipped", 0), ("true", "1 passed, 1 error", 1)]
)
def test_missing_prerequisite_fails_only_under_ci(
    tmp_path: Path, ci: str, outcome: str, rc: int
) -> None:
    (tmp_path / "test_x.py").write_text(TESTS)
    env = dict(
        os.environ, CI=ci, PYTEST_ADDOPTS="", PYTHONPATH=os.pathsep.join([str(REPO), *sys.path])
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-rs", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert outcome in proc.stdout and proc.returncode == rc, proc.stdout[-3000:]
    assert "the frobnicator is not installed" in proc.stdout


def test_xdist_groups_keep_shared_fixtures_on_one_worker() -> None:
    users = sorted(
        path.relative_to(REPO).as_posix()
        for path in (REPO / "tests").rglob("test_*.py")
        if path != Path(__file__) and "finished_sweep" in path.read_text()
    )
    assert users == sorted(SHARED_SWEEP_FILES)
    assert {xdist_scope(f"{path}::test_x") for path in users} == {"sweep"}
    assert xdist_scope("tests/slurm/test_faults.py::test_a[1]") == "slurm"
    assert xdist_scope("tests/slurm/test_recovery.py::test_a") == "slurm-2"
    # every Slurm test file is named in one of the two groups, none in both
    slurm_files = sorted(p.name for p in REPO.glob("tests/slurm/test_*.py"))
    listed = [name for files in SLURM_SCOPES.values() for name in files]
    assert sorted(listed) == slurm_files
    assert (
        xdist_scope("tests/report/test_scaling_plots.py::test_a")
        == "tests/report/test_scaling_plots.py"
    )
    # the NeMo venv is a session fixture of both files: one group, one build
    nemo = {
        xdist_scope(f"{p.relative_to(REPO).as_posix()}::t")
        for p in REPO.glob("tests/nemo/test_*.py")
    }
    assert nemo == {"tests/nemo/"}


def test_longest_groups_are_queued_first() -> None:
    """Every group named in ``LONGEST_SCOPES`` still exists (a renamed file would silently
    drop to the end of the queue), and the two Slurm groups are queued before everything."""
    scopes = {
        xdist_scope(path.relative_to(REPO).as_posix() + "::t")
        for path in (REPO / "tests").rglob("test_*.py")
    }
    assert set(LONGEST_SCOPES) <= scopes, set(LONGEST_SCOPES) - scopes
    assert LONGEST_SCOPES[:2] == tuple(SLURM_SCOPES)
    assert queue_rank("tests/slurm/test_faults.py::t") == 0
    assert queue_rank("tests/slurm/test_recovery.py::t") == 1
    assert queue_rank("tests/nemo/test_nemo_parity.py::t") < queue_rank(
        "tests/report/test_scaling_plots.py::t"
    )
