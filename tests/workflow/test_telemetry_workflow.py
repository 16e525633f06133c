"""Telemetry and preflight through the real workflow: energy from RAPL where it is
readable (a real folder tree with the kernel's files, its counter advanced like the
kernel's), NaN with the reason where it is not, and the gloo preflight's figures."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from llmbench.telemetry.cpu import rapl_reader
from llmbench.telemetry.energy import JOULES_PER_KWH
from tests.helpers import Sweep, snakemake, tiny_config, write_config
from tests.telemetry.conftest import node_tree, write_counter

pytestmark = pytest.mark.workflow

WATTS = 25.0


def test_energy_columns_on_this_machine(finished_sweep: Sweep) -> None:
    """Filled where this kernel exposes readable RAPL counters, NaN with why otherwise."""
    runs = pd.read_parquet(finished_sweep.results / "tables/runs.parquet")
    assert (runs.telemetry_source == "rapl").all()
    assert (runs.window_s > 0).all() and (runs.util_mean > 0).all()
    if rapl_reader(Path("/")).zones:
        assert (runs.energy_j > 0).all() and (runs.energy_reason == "").all()
    else:
        assert runs.energy_j.isna().all() and runs.joules_per_token.isna().all()
        reason = rapl_reader(Path("/")).reason
        assert (runs.energy_reason == reason).all(), runs.energy_reason
    samples = pd.read_parquet(finished_sweep.results / "tables/telemetry.parquet")
    assert set(samples.run_id) == set(runs.run_id)
    for group in runs.workload + "_" + runs["size"] + "_" + runs.gpu_type + "_" + runs.scaling:
        assert (finished_sweep.results / f"plots/telemetry/{group}.svg").stat().st_size > 0


def test_rapl_energy_and_gloo_preflight(tmp_path: Path) -> None:
    root = node_tree(tmp_path / "node")
    (root / "proc/stat").unlink()
    (root / "proc").rmdir()
    (root / "proc").symlink_to("/proc")  # real utilisation, RAPL from the tree
    counter = root / "sys/class/powercap/intel-rapl:0/energy_uj"
    stop = threading.Event()

    def kernel() -> None:  # a package drawing WATTS, as the kernel's counter would show
        # From the clock, not a count of ticks: on a busy CPU this thread's ticks come
        # late, and the counter must still say WATTS x elapsed time, as the kernel's does.
        start = time.monotonic()
        while not stop.wait(0.01):
            write_counter(counter, 1_000_000 + int(WATTS * (time.monotonic() - start) * 1e6))

    config = tiny_config(
        (1,),
        telemetry={"root": str(root), "period_ms": 100},
        preflight=True,
    )
    write_config(tmp_path, config)
    thread = threading.Thread(target=kernel, daemon=True)
    thread.start()
    try:
        proc = snakemake(tmp_path, "--cores", "2")
    finally:
        stop.set()
        thread.join()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    run = pd.read_parquet(tmp_path / "results/tables/runs.parquet").iloc[0]
    assert run.energy_reason == "" and run.telemetry_source == "rapl"
    # a late tick of the writer thread at the window's edges is the only error
    ratio = run.energy_j / (WATTS * run.window_s)
    assert 0.7 < ratio < 1.3, ratio
    steps = run.window_last - run.window_first + 1
    tokens = run.global_batch_size * run.seq_len
    assert run.energy_per_step_j == pytest.approx(run.energy_j / steps)
    assert run.joules_per_token == pytest.approx(run.energy_j / steps / tokens)
    assert run.tokens_per_kwh == pytest.approx(JOULES_PER_KWH / run.joules_per_token)
    assert run.mean_power_w_per_gpu == pytest.approx(run.energy_j / run.window_s / run.gpus)
    assert not math.isnan(run.util_mean)

    nodes = pd.read_parquet(tmp_path / "results/tables/nodes.parquet")
    assert len(nodes) == 1 and nodes.status.iloc[0] == "ok"
    assert nodes.busbw_gbps.iloc[0] > 0 and nodes.alltoall_busbw_gbps.iloc[0] > 0
    assert nodes.checks.iloc[0] == "gloo all-reduce, gloo alltoall"
    assert "Cluster: preflight" in (tmp_path / "results/tables/nodes.html").read_text()


def test_gpu_sweep_dag_checks_every_node_and_the_largest_allocation(tmp_path: Path) -> None:
    """GPU sweeps: preflight on by default; a node job each, the gate, and the multi-node
    all-reduce (2 nodes for the 16-GPU run) before any train job."""
    from tests.workflow.test_setup_rules import job_counts

    config = tiny_config(
        (8, 16), launcher="srun", container="enroot", preflight={"nodes": ["g1", "g2", "g3"]}
    )
    config["sweeps"][0].update(
        workload="llama3.1-nemo", sizes=["8b"], dtypes=["bf16"], gpu_type="h100"
    )
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc.stdout)
    assert counts["preflight_node"] == 3 and counts["preflight_gate"] == 1
    assert counts["preflight_fabric"] == 1 and counts["train"] == 2
    assert "slurm_extra=--nodelist=g2" in proc.stdout
