"""Preflight on the real 2-node Slurm test cluster: a node with an Xid in its kernel log
(a public Xid 79 line, in the node's root folder) and slowed by the fault injector (its
all-reduce and alltoall) is excluded from the train jobs (``--exclude``), listed with its
reasons on the Cluster page, and the sweep goes on on the other node; a sweep that needs
both nodes stops before training, with one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import REPO, snakemake, tiny_config, write_config
from tests.preflight.test_node_checks import kernel_log, xid_lines
from tests.slurm.conftest import SLURM_TEST_OVERRIDES

pytestmark = pytest.mark.slurm

SLOW_N2 = "slow@0:preflight_n2"


def preflight_config(scales: tuple[int, ...], roots: Path) -> dict:
    return tiny_config(
        scales,
        launcher="srun",
        ranks_per_node=1,
        master_addr="127.0.0.1",
        preflight={"enabled": True, "nodes": ["n1", "n2"], "root": f"{roots}/%n"},
    )


def node_roots(tmp_path: Path) -> Path:
    """Each fake node's dev/ and sys/ (both run on this host): n2's kernel log holds a
    real Xid 79 line, n1's only the driver's line before it."""
    roots = tmp_path / "roots"
    kernel_log(roots / "n1", [line for line in xid_lines("79") if "Xid" not in line])
    kernel_log(roots / "n2", xid_lines("79"))
    return roots


TARGETS = tuple(f"results/tables/{n}" for n in ("nodes.parquet", "nodes.html", "runs.parquet"))
"""What the checks read: the plots and the telemetry table would add two Slurm stages and
prove nothing about preflight (tests/slurm/test_workflow_slurm.py runs the whole DAG)."""


def run(tmp_path, monkeypatch, scales) -> subprocess.CompletedProcess:
    monkeypatch.setenv("LLMBENCH_FAULT", SLOW_N2)
    write_config(tmp_path, preflight_config(scales, node_roots(tmp_path)))
    return snakemake(
        tmp_path, "--profile", str(REPO / "profiles/slurm"), *SLURM_TEST_OVERRIDES, *TARGETS,
        timeout=900,
    )  # fmt: skip


def test_slow_node_is_excluded_and_the_sweep_goes_on(slurm_cluster, tmp_path, monkeypatch):
    proc = run(tmp_path, monkeypatch, (1,))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    nodes = pd.read_parquet(tmp_path / "results/tables/nodes.parquet").set_index("node")
    assert nodes.loc["n1", "status"] == "ok", nodes.T
    assert nodes.loc["n2", "status"] == "excluded", nodes.T
    reason = nodes.loc["n2", "reason"]
    assert "Xid 79 on PCI:0000:2b:00 (RESTART_BM: exclude)" in reason
    assert "all-reduce bus bandwidth" in reason and "alltoall bus bandwidth" in reason
    assert nodes.loc["n2", "busbw_gbps"] < nodes.loc["n2", "threshold_gbps"]
    assert nodes.loc["n2", "alltoall_busbw_gbps"] < nodes.loc["n2", "alltoall_threshold_gbps"]
    assert nodes.loc["n1", "busbw_gbps"] > 0 and nodes.loc["n1", "alltoall_busbw_gbps"] > 0
    assert nodes.loc["n1", "reason"] == "" and "xid pass" in nodes.loc["n1", "node_checks"]
    page = (tmp_path / "results/tables/nodes.html").read_text()
    assert "Xid 79 on PCI:0000:2b:00" in page and "alltoall bus bandwidth" in page

    run_dir = tmp_path / "results/runs/tiny-llama_tiny_fp32_cpux1_perf"
    record = json.loads((run_dir / "run.json").read_text())
    job_id = record["provenance"]["slurm_job_id"]
    # squeue's %x: the nodes the job excluded (finished jobs stay listed, MinJobAge)
    excluded = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%x"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert excluded == "n2"
    job = json.loads((run_dir / record["attempt_dir"] / "job.json").read_text())
    assert job["nodelist"] == "n1"
    runs = pd.read_parquet(tmp_path / "results/tables/runs.parquet")
    assert (runs.status == "success").all(), runs[["status", "reason"]]


def test_too_few_nodes_stop_the_sweep_before_training(slurm_cluster, tmp_path, monkeypatch):
    proc = run(tmp_path, monkeypatch, (1, 2))
    assert proc.returncode != 0
    log = (tmp_path / "results/logs/preflight/gate.log").read_text().strip().splitlines()
    assert log == [
        "llmbench: error: preflight: 1 of 2 nodes passed but the sweep's largest run needs 2; "
        + log[0].split("needs 2; ", 1)[1]
    ]
    assert "excluded: n2: Xid 79" in log[0] and "; all-reduce bus bandwidth" in log[0]
    assert not (tmp_path / "results/runs").exists()  # no train job started
