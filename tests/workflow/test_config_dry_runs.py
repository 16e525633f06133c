"""Every experiment the workflow tests run (tests/workflow/configs/*.yaml) is a file a person
can dry-run: ``snakemake -n --configfile <file>`` plans it. CI runs this file with the
oldest Snakemake llmbench declares as well as the pinned one (.ci/run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import WORKFLOW_CONFIGS, snakemake

pytestmark = pytest.mark.workflow
CONFIGS = sorted(WORKFLOW_CONFIGS.glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_test_config_plans_with_snakemake(path: Path, tmp_path: Path) -> None:
    config = yaml.safe_load(path.read_text())
    # files the experiment names, present as its test writes them
    reference = (config.get("reference") or {}).get("file")
    if reference:  # an input of the aggregate job
        (tmp_path / reference).write_text("workload,size,dtype,gpu_type,gpus,step_time_s\n")
    requirements = (config.get("setup") or {}).get("venv_requirements")
    if requirements:  # the training venv's pinned packages
        (tmp_path / requirements).write_text("pip\n")
    proc = snakemake(tmp_path, "-n", "--configfile", str(path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = len(config["sweeps"][0]["scales"]) * len(config["sweeps"][0]["dtypes"])
    assert "Job stats:" in proc.stdout and f"train{' ' * 5}" in proc.stdout
    assert proc.stdout.count("rule train:") >= jobs
