"""Bad-input probe 4 (notes/bad-input-probe-4.md), the GPU proof kit's run.sh: GP9 and
GP9b (``--dry`` into a read-only folder, or a new one under it) stop in one run.sh line
with exit 2, not mkdir's two raw lines; GP12 (``GPU_PROOF_WHEELS`` naming no folder)
says the folder does not exist instead of 52 "wheels found: none". The read-only file
system is real: a tmpfs mounted read-only in a private mount namespace of the test
(``unshare``), gone with it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, missing_prerequisite

RUN_SH = REPO / "benchmarks/gpu_proof/run.sh"
UNSHARE = shutil.which("unshare")


def in_read_only_mount(folder: Path, *command: str) -> subprocess.CompletedProcess:
    """``command`` with ``folder`` a read-only tmpfs, in a mount namespace of its own."""
    folder.mkdir()
    script = 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"'
    proc = subprocess.run(
        [UNSHARE or "unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script,
         str(folder), *command],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if "mount" in proc.stderr and "permission denied" in proc.stderr.lower():
        missing_prerequisite("user namespaces (unshare --user --mount) are not allowed here")
    return proc


@pytest.mark.parametrize(("case", "sub"), [("GP9", ""), ("GP9b", "new")])
def test_run_sh_into_a_read_only_folder_is_one_line(case: str, sub: str, tmp_path: Path) -> None:
    if UNSHARE is None:
        missing_prerequisite("unshare (util-linux) is not installed")
    ro = tmp_path / "ro9"
    out = ro / sub if sub else ro
    proc = in_read_only_mount(ro, "bash", str(RUN_SH), "--dry", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"run.sh: error: OUTDIR {out} cannot be written (Read-only file system); allowed: "
        "a new or empty folder this user can write\n"
    )
    assert proc.stdout == "" and list(ro.iterdir()) == []  # the mount is gone with it


def test_run_sh_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    proc = subprocess.run(
        ["bash", str(RUN_SH), "--dry", str(tmp_path / "afile/out")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "cannot be written (Not a directory)" in proc.stderr


def test_GP12_a_wheels_folder_that_does_not_exist_is_one_problem(tmp_path: Path) -> None:
    """The dry mode's wheels step, as run.sh runs it with GPU_PROOF_WHEELS=/nonexistent."""
    missing = tmp_path / "nonexistent"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_proof", "wheels", "--list",
         str(REPO / "benchmarks/gpu_proof/wheels.txt"), "--pins",
         str(REPO / "envs/requirements.txt"), "--wheels", str(missing)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        f"wheels: {missing} does not exist; allowed: the folder benchmarks/gpu_proof/wheels.sh "
        "filled (GPU_PROOF_WHEELS)\n"
    )
    assert proc.stdout.endswith(f"the wheels folder {missing} does not exist; 1 problem\n")
