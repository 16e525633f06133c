"""Snakemake inside a job (``--mode remote``, as the Slurm executor plugin runs it) reads
back the config the main process checked instead of checking it again, and checks again
when the config changed since."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, snakemake, snakemake_command, tiny_config, write_config

pytestmark = pytest.mark.workflow

SITE = ("--configfiles", str(REPO / "profiles/slurm/site.yaml"), "--config", "master_addr=x")


def in_job(workdir: Path, run: str) -> tuple[int, str]:
    """The job step's Snakemake for ``run``'s train job, as a dry run, with the imports
    Python reports (``-X importtime``) in its stderr."""
    args = (
        "--target-jobs", f"train:run={run}", "--allowed-rules", "train", "--mode", "remote",
        "--nolock", "-n", *SITE,
    )  # fmt: skip
    command = snakemake_command(workdir, *args)
    assert command[0] == sys.executable
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        cwd=workdir, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )  # fmt: skip
    return proc.returncode, proc.stderr


def imported(stderr: str, module: str) -> bool:
    """Whether ``-X importtime`` lists ``module``, at any depth (its name is indented by
    how deep the import was)."""
    lines = (line for line in stderr.splitlines() if line.startswith("import time:"))
    return any(line.rsplit("|", 1)[-1].strip() == module for line in lines)


def test_a_job_reads_the_checked_config_back(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_config((1, 2)))
    main = snakemake(tmp_path, "-n", *SITE)
    assert main.returncode == 0, main.stderr[-3000:]
    assert "llmbench: warning: " not in main.stderr  # the site values come from the profile
    assert (tmp_path / ".snakemake/llmbench/specs.json").is_file()

    code, stderr = in_job(tmp_path, "tiny-llama_tiny_fp32_cpux2_perf")
    assert code == 0, stderr[-3000:]
    assert imported(stderr, "llmbench.workflow.spec_cache")
    assert not imported(stderr, "llmbench.core.config")  # no schema check, no expansion


def test_a_changed_config_is_checked_again_in_the_job(tmp_path: Path) -> None:
    write_config(tmp_path, tiny_config((1, 2)))
    assert snakemake(tmp_path, "-n", *SITE).returncode == 0
    write_config(tmp_path, tiny_config((1, 2, 3)))  # edited after the main process read it

    code, stderr = in_job(tmp_path, "tiny-llama_tiny_fp32_cpux3_perf")
    assert code == 0, stderr[-3000:]
    assert imported(stderr, "llmbench.core.config")

    write_config(tmp_path, tiny_config((1, 2), steps=3))  # refused: the window
    code, stderr = in_job(tmp_path, "tiny-llama_tiny_fp32_cpux1_perf")
    assert code != 0
    assert "llmbench: error: config.yaml: steps: 3 must be at least" in stderr
