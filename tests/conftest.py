"""Shared fixtures. ``finished_sweep`` runs the real workflow once per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI") == "true"


def missing_prerequisite(reason: str) -> NoReturn:
    """Skip a test whose outside prerequisite is missing; under ``CI=true`` fail it
    instead, so CI cannot be green with a whole test group skipped."""
    if IN_CI:
        pytest.fail(f"CI=true and a prerequisite is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prerequisite(available, reason): skip when not available (fail under CI=true)",
    )
    config.addinivalue_line("markers", "xdist_group(name): one pytest-xdist worker runs the group")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups for pytest-xdist's ``--dist loadgroup`` (CI), each run by one worker: the
    Slurm suite (one local cluster at a time, mostly waiting on the scheduler), queued
    first so that it runs alongside the CPU-bound tests; the tests of the shared sweep (it
    runs once); else one test file (its module fixtures are built once)."""
    for item in items:
        if item.get_closest_marker("slurm"):
            group = "slurm"
        elif "finished_sweep" in getattr(item, "fixturenames", ()):
            group = "sweep"
        else:
            group = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slurm") is None)  # stable


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("prerequisite"):
        available, reason = mark.args
        if not available:
            missing_prerequisite(reason)


def tiny_sweep(scales: tuple[int, ...] = (1, 2), dtypes: tuple[str, ...] = ("fp32",)) -> dict:
    """A sweep entry of the embedded workload (tiny Llama on the CPU) at ``scales`` ranks."""
    return {
        "workload": "tiny-llama",
        "sizes": ["tiny"],
        "dtypes": list(dtypes),
        "gpu_type": "cpu",
        "scales": list(scales),
    }


def tiny_config(scales: tuple[int, ...] = (1, 2), **top: object) -> dict:
    """The embedded workload in fp32 at ``scales`` ranks, 45 steps (the window fits)."""
    return {"sweeps": [tiny_sweep(scales)], "steps": 45, **top}


TWO_RUN_CONFIG = tiny_config()


@dataclass(frozen=True)
class Sweep:
    workdir: Path
    config: dict
    first_run: subprocess.CompletedProcess

    @property
    def results(self) -> Path:
        return self.workdir / "results"


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The real snakemake CLI on this repo's Snakefile, working in ``workdir``."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]


def snakemake(workdir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``snakemake_command`` to the end."""
    return subprocess.run(
        snakemake_command(workdir, *args),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def write_config(workdir: Path, config: dict) -> Path:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """A 2-run embedded sweep (fp32, 1 and 2 ranks, 45 steps) run by the real workflow."""
    workdir = tmp_path_factory.mktemp("sweep")
    write_config(workdir, TWO_RUN_CONFIG)
    proc = snakemake(workdir, "--cores", "2")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return Sweep(workdir, TWO_RUN_CONFIG, proc)
