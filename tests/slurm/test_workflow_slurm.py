"""The whole workflow through snakemake-executor-plugin-slurm on the real local cluster:
the embedded workload at a scale that spans both nodes, one rank per node."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import REPO, snakemake, write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.conftest import SLURM_TEST_OVERRIDES

pytestmark = pytest.mark.slurm


def test_sweep_runs_through_slurm_on_two_nodes(slurm_cluster, tmp_path) -> None:
    write_config(tmp_path, CONFIG)
    proc = snakemake(
        tmp_path, "--profile", str(REPO / "profiles/slurm"), *SLURM_TEST_OVERRIDES, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "sbatch" in proc.stdout + proc.stderr or "Job" in proc.stderr

    runs = pd.read_parquet(tmp_path / "results/tables/runs.parquet").set_index("run_id")
    two = runs.loc["tiny-llama_tiny_fp32_cpux2_perf"]
    assert (runs.status == "success").all(), runs[["status", "reason"]]
    assert two.nodes == 2 and (runs.tokens_per_s > 0).all()

    for run_id in runs.index:
        record = json.loads((tmp_path / "results/runs" / run_id / "run.json").read_text())
        job_id = record["provenance"]["slurm_job_id"]
        assert job_id and job_id.isdigit(), record["provenance"]
        launch = (tmp_path / "results/runs" / run_id / record["launch_script"]).read_text()
        assert "srun" in launch and "--ntasks-per-node=1" in launch
    record = json.loads(
        (tmp_path / "results/runs/tiny-llama_tiny_fp32_cpux2_perf/run.json").read_text()
    )
    log = (tmp_path / "results/runs/tiny-llama_tiny_fp32_cpux2_perf" / record["log"]).read_text()
    nodes = {
        line.rsplit(" ", 1)[-1] for line in log.splitlines() if line.startswith("llmbench rank ")
    }
    assert nodes == {"n1", "n2"}, log[:2000]
    assert log.count("train_step_timing in s:") == 45
