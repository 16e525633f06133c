"""The real frameworks on a CPU (tests/nemo/venvs.py). They run in CI (``CI=true``), or
locally with ``LLMBENCH_NEMO=1`` / ``LLMBENCH_MBRIDGE=1``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.nemo.mbridge_stand_ins import write_hf_cache
from tests.nemo.venvs import REPO, mbridge_05_overlay, mbridge_overlay
from tests.nemo.venvs import nemo_python as build_nemo_python


def _wanted(*switches: str) -> bool:
    return os.environ.get("CI") == "true" or any(os.environ.get(s) == "1" for s in switches)


@pytest.fixture(scope="session")
def nemo_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _wanted("LLMBENCH_NEMO"):
        pytest.skip("real NeMo check: set LLMBENCH_NEMO=1 (builds a ~3 GB venv; CI does)")
    return build_nemo_python(tmp_path_factory.mktemp("venv"))


@pytest.fixture(scope="session")
def mbridge_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(interpreter, environment) that import Megatron-Bridge 0.1.0rc3 and Megatron-Core
    0.14.0 from their folder before the NeMo venv's own packages, and this checkout's
    llmbench."""
    if not _wanted("LLMBENCH_MBRIDGE", "LLMBENCH_NEMO"):
        pytest.skip("real Megatron-Bridge check: set LLMBENCH_MBRIDGE=1 (uses the NeMo venv)")
    python = build_nemo_python(tmp_path_factory.mktemp("venv"))
    folder = mbridge_overlay(python)
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{REPO / 'src'}"}
    return python, env


@pytest.fixture(scope="session")
def mbridge_05_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(interpreter, environment) that import Megatron-Bridge 0.5.1 and Megatron-Core 0.18.0
    (envs/venv-mbridge-0.5.txt) before the NeMo venv's packages, and this checkout's
    llmbench; the Hugging Face configs the recipes read come from a local cache, offline
    (tests/nemo/mbridge_stand_ins.py)."""
    if not _wanted("LLMBENCH_MBRIDGE", "LLMBENCH_NEMO"):
        pytest.skip("real Megatron-Bridge check: set LLMBENCH_MBRIDGE=1 (uses the NeMo venv)")
    python = build_nemo_python(tmp_path_factory.mktemp("venv"))
    folder = mbridge_05_overlay(python)
    hf_home = tmp_path_factory.mktemp("hf-home")
    write_hf_cache(hf_home)
    env = {
        **os.environ,
        "PYTHONPATH": f"{folder}{os.pathsep}{REPO / 'src'}",
        "HF_HOME": str(hf_home),
        "HF_HUB_OFFLINE": "1",
    }
    return python, env
