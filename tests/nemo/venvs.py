"""The real frameworks on a CPU, built once and cached: the NeMo 2 venv (envs/venv-nemo2.txt)
and, on top of it, two Megatron-Bridge overlays, each installed without dependencies into a
folder that goes first on the venv's path: 0.1.0rc3 as the spec's reference image carries it
(envs/venv-mbridge.txt) and 0.5.1 with Megatron-Core 0.18 for the v26.08 release
(envs/venv-mbridge-0.5.txt).

Each is rebuilt only when its requirements changed, under one file lock, so that CI can
build them in the background from its start (``python -m tests.nemo.venvs``, .ci/run)
while the tests that need them wait for the lock instead of building a second copy."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from llmbench.core.stage import VENV_MARKER
from llmbench.setup.venv import build_venv

REPO = Path(__file__).resolve().parents[2]
NEMO_REQUIREMENTS = REPO / "envs" / "venv-nemo2.txt"
MBRIDGE_REQUIREMENTS = REPO / "envs" / "venv-mbridge.txt"
MBRIDGE_05_REQUIREMENTS = REPO / "envs" / "venv-mbridge-0.5.txt"
CACHE = Path.home() / ".cache" / "llmbench"
MBRIDGE_MARKER = ".llmbench-mbridge.txt"


def _digest(path: Path) -> str:
    return "sha256=" + hashlib.sha256(path.read_bytes()).hexdigest()


def nemo_venv_dir() -> Path:
    return Path(os.environ.get("LLMBENCH_NEMO_VENV", CACHE / "venv-nemo2"))


def mbridge_dir() -> Path:
    return Path(os.environ.get("LLMBENCH_MBRIDGE_DIR", CACHE / "mbridge-overlay"))


def mbridge_05_dir() -> Path:
    return Path(os.environ.get("LLMBENCH_MBRIDGE_05_DIR", CACHE / "mbridge-0.5-overlay"))


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """One builder at a time, in any process; a waiter then finds the build done."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def nemo_python(log_dir: Path) -> Path:
    """The NeMo 2 venv's interpreter, built when its requirements changed. Its bytecode
    is compiled on first import, not for every installed module: most are never imported."""
    venv = nemo_venv_dir()
    marker = venv / VENV_MARKER
    with build_lock():
        if not (marker.is_file() and _digest(NEMO_REQUIREMENTS) in marker.read_text()):
            build_venv(venv, NEMO_REQUIREMENTS, marker, log=log_dir / "build.log", precompile=False)
    return venv / "bin" / "python"


def mbridge_overlay(
    python: Path, requirements: Path = MBRIDGE_REQUIREMENTS, folder: Path | None = None
) -> Path:
    """Megatron-Bridge and its Megatron-Core (``requirements``), installed without
    dependencies into ``folder`` (default: the 0.1.0rc3 one) for the NeMo venv's ``python``,
    built when their requirements changed. A wheel's Requires-Python is not checked: 0.5
    declares 3.12 but its modules parse with the venv's 3.11 (tests/nemo/mbridge_stand_ins.py
    says what else the CPU check needs)."""
    folder = folder or mbridge_dir()
    marker = folder / MBRIDGE_MARKER
    with build_lock():
        if not (marker.is_file() and marker.read_text().strip() == _digest(requirements)):
            building = folder.with_name(folder.name + ".part")
            shutil.rmtree(building, ignore_errors=True)
            pip = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]
            subprocess.run(
                [*pip, "install", "--no-deps", "--ignore-requires-python", "--no-compile",
                 "--target", str(building), "-r", str(requirements)],
                check=True, capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            (building / MBRIDGE_MARKER).write_text(_digest(requirements) + "\n")
            shutil.rmtree(folder, ignore_errors=True)
            building.rename(folder)  # complete or absent: the marker is inside
    return folder


def mbridge_05_overlay(python: Path) -> Path:
    """Megatron-Bridge 0.5.1 and Megatron-Core 0.18.0 for the v26.08 rows (0.1.0rc3's
    folder stays for the spec's rows)."""
    return mbridge_overlay(python, MBRIDGE_05_REQUIREMENTS, mbridge_05_dir())


def main() -> int:
    """Build all three (CI starts this in the background; the tests wait on the lock)."""
    log_dir = Path(tempfile.mkdtemp(prefix="llmbench-nemo-venv-"))
    python = nemo_python(log_dir)
    mbridge_overlay(python)
    mbridge_05_overlay(python)
    print(f"NeMo venv and Megatron-Bridge overlays ready ({python}); log in {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
