"""The real frameworks on a CPU, built once and cached: the NeMo 2 venv (envs/venv-nemo2.txt)
and, on top of it, Megatron-Bridge as the reference image carries it
(envs/venv-mbridge.txt, installed without dependencies into a folder that goes first on
the venv's path). They run in CI (``CI=true``), or locally with ``LLMBENCH_NEMO=1`` /
``LLMBENCH_MBRIDGE=1``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from llmbench.setup.venv import build_venv
from llmbench.spec.stage import VENV_MARKER

REPO = Path(__file__).resolve().parents[2]
NEMO_REQUIREMENTS = REPO / "envs" / "venv-nemo2.txt"
MBRIDGE_REQUIREMENTS = REPO / "envs" / "venv-mbridge.txt"
CACHE = Path.home() / ".cache" / "llmbench"
MBRIDGE_MARKER = ".llmbench-mbridge.txt"


def _wanted(*switches: str) -> bool:
    return os.environ.get("CI") == "true" or any(os.environ.get(s) == "1" for s in switches)


def _digest(path: Path) -> str:
    return "sha256=" + hashlib.sha256(path.read_bytes()).hexdigest()


def _nemo_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The NeMo 2 venv's interpreter, built when its requirements changed."""
    venv = Path(os.environ.get("LLMBENCH_NEMO_VENV", CACHE / "venv-nemo2"))
    marker = venv / VENV_MARKER
    if not (marker.is_file() and _digest(NEMO_REQUIREMENTS) in marker.read_text()):
        log = tmp_path_factory.mktemp("venv") / "build.log"
        build_venv(venv, NEMO_REQUIREMENTS, marker, log=log)
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def nemo_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _wanted("LLMBENCH_NEMO"):
        pytest.skip("real NeMo check: set LLMBENCH_NEMO=1 (builds a ~3 GB venv; CI does)")
    return _nemo_venv(tmp_path_factory)


@pytest.fixture(scope="session")
def mbridge_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(interpreter, environment) that import Megatron-Bridge 0.1.0rc3 and Megatron-Core
    0.14.0 from their folder before the NeMo venv's own packages, and this checkout's
    llmbench."""
    if not _wanted("LLMBENCH_MBRIDGE", "LLMBENCH_NEMO"):
        pytest.skip("real Megatron-Bridge check: set LLMBENCH_MBRIDGE=1 (uses the NeMo venv)")
    python = _nemo_venv(tmp_path_factory)
    folder = Path(os.environ.get("LLMBENCH_MBRIDGE_DIR", CACHE / "mbridge-overlay"))
    marker = folder / MBRIDGE_MARKER
    if not (marker.is_file() and marker.read_text().strip() == _digest(MBRIDGE_REQUIREMENTS)):
        building = folder.with_name(folder.name + ".part")
        shutil.rmtree(building, ignore_errors=True)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]
        subprocess.run(
            [*pip, "install", "--no-deps", "--target", str(building), "-r",
             str(MBRIDGE_REQUIREMENTS)],
            check=True, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        (building / MBRIDGE_MARKER).write_text(_digest(MBRIDGE_REQUIREMENTS) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        building.rename(folder)  # complete or absent: the marker is inside
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{REPO / 'src'}"}
    return python, env
