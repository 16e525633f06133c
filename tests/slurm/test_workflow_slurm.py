"""The whole workflow through snakemake-executor-plugin-slurm on the real local cluster:
the embedded workload at a scale that spans both nodes, one rank per node; training jobs
run at once unless the profile asks for one at a time (read from the controller's log)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from llmbench.core.config import site_keys_in
from tests.helpers import REPO, TINY_STEPS, snakemake, write_config
from tests.slurm.conftest import SLURM_CONFIG as CONFIG
from tests.slurm.conftest import SLURM_TEST_OVERRIDES, allocations, most_at_once

pytestmark = pytest.mark.slurm
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")


def run_sweep(
    workdir: Path, *profiles: Path, targets: list[str] | tuple[str, ...] = ()
) -> dict[str, str]:
    """The sweep (or its ``targets``) through Slurm; each run's Slurm job id (run.json)."""
    workdir.mkdir(exist_ok=True)
    write_config(workdir, CONFIG)
    profile_args = [arg for p in profiles for arg in ("--profile", str(p))]
    proc = snakemake(
        workdir, "--profile", str(REPO / "profiles/slurm"), *profile_args,
        *SLURM_TEST_OVERRIDES, *targets, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # the experiment names no site key: the profile alone said where (docs/profiles.md)
    assert site_keys_in(CONFIG) == [] and "where to run belongs" not in proc.stderr
    jobs = {}
    for record_path in (workdir / "results/runs").glob("*/run.json"):
        jobs[record_path.parent.name] = json.loads(record_path.read_text())["provenance"][
            "slurm_job_id"
        ]
    # every run's job went through sbatch: the executor logged its submission
    assert set(jobs.values()) <= set(SUBMITTED.findall(proc.stdout + proc.stderr)), jobs
    assert len(jobs) == 2, jobs
    return jobs


def test_sweep_runs_through_slurm_on_two_nodes(slurm_cluster, tmp_path) -> None:
    jobs = run_sweep(tmp_path)
    # profiles/slurm allows concurrent training jobs: the controller ran both at once
    held = allocations(slurm_cluster)
    assert set(jobs.values()) <= set(held), (jobs, held)
    assert most_at_once(held[job] for job in jobs.values()) == 2, held

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
    assert log.count("train_step_timing in s:") == TINY_STEPS


def test_profile_can_ask_for_one_training_job_at_a_time(slurm_cluster, tmp_path) -> None:
    serial = tmp_path / "one-at-a-time"
    serial.mkdir()
    (serial / "config.yaml").write_text("set-resource-scopes:\n  - bench=global\n")
    # the training jobs only: aggregation and plots add nothing to this question
    runs = ("tiny-llama_tiny_fp32_cpux1_perf", "tiny-llama_tiny_fp32_cpux2_perf")
    jobs = run_sweep(
        tmp_path / "sweep", serial, targets=[f"results/runs/{r}/run.json" for r in runs]
    )
    held = allocations(slurm_cluster)
    assert most_at_once(held[job] for job in jobs.values()) == 1, held
