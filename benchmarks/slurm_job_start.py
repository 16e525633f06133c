"""Time each Slurm training job spends inside its allocation before the run starts, with a
1,000-run sweep in the DAG (Snakemake evaluates the Snakefile again inside every job).

    python -m benchmarks.slurm_job_start [--runs 1000] [--json out.json] [--no-fail]

Needs root and Slurm + munge (tests/slurm/install.sh): it starts the local 2-node test
cluster (tests/slurm/cluster.sh). The sweep holds ``--runs`` embedded-workload runs
(fp32 and bf16 at scales 1..runs/2, srun, one rank per node); three of them are run
through ``profiles/slurm`` (two on one node, one on both). A baseline sweep of 4 runs
(scales 1 and 2) is timed on the same cluster, so the ratio shows what the big DAG adds.
Per job: from the controller's allocation (slurmctld log) to the attempt's start
(``started_at`` in run.json, written by the runner before it launches the ranks).
Target: every job <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import yaml

from tests.conftest import REPO, snakemake, tiny_config
from tests.slurm.conftest import SLURM_TEST_OVERRIDES, allocations, local_cluster

TARGET_S = 5.0
BASELINE_RUNS = 4
TARGETS = (
    "tiny-llama_tiny_fp32_cpux1_perf",
    "tiny-llama_tiny_bf16_cpux1_perf",
    "tiny-llama_tiny_fp32_cpux2_perf",
)


def sweep_config(runs: int) -> dict:
    """``runs`` embedded runs (fp32 and bf16 per scale), 10 steps each, on the test cluster."""
    config = tiny_config(
        tuple(range(1, max(runs // 2, 2) + 1)),
        launcher="srun",
        ranks_per_node=1,  # the 2-rank run spans both fake nodes
        master_addr="127.0.0.1",
        steps=10,
        window=[5, 9],
    )
    config["sweeps"][0]["dtypes"] = ["fp32", "bf16"]
    return config


def in_allocation_s(cluster: Path, workdir: Path, runs: int) -> dict[str, float]:
    """Run the TARGETS of a ``runs``-run sweep through Slurm; seconds per job."""
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(sweep_config(runs), sort_keys=False))
    targets = [f"results/runs/{run}/run.json" for run in TARGETS]
    proc = snakemake(
        workdir, "--profile", str(REPO / "profiles/slurm"), *SLURM_TEST_OVERRIDES, *targets,
        timeout=1200,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"sweep of {runs} runs failed:\n{proc.stderr[-4000:]}")
    held = allocations(cluster)
    seconds = {}
    for run in TARGETS:
        record = json.loads((workdir / "results/runs" / run / "run.json").read_text())
        allocated, _ = held[record["provenance"]["slurm_job_id"]]
        # the controller logs local time
        started = datetime.fromisoformat(record["started_at"]).astimezone().replace(tzinfo=None)
        seconds[run] = (started - allocated).total_seconds()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even above target")
    args = parser.parse_args()

    with local_cluster() as cluster, tempfile.TemporaryDirectory() as tmp:
        # the baseline first: the big sweep then finds the cluster warm too
        small = in_allocation_s(cluster, Path(tmp) / "small", BASELINE_RUNS)
        big = in_allocation_s(cluster, Path(tmp) / "big", args.runs)
    result = {
        "runs": args.runs,
        "in_allocation_s": big,
        "baseline_in_allocation_s": small,
        "max_s": max(big.values()),
        "ratio_mean_vs_baseline": statistics.mean(big.values()) / statistics.mean(small.values()),
        "target_s": TARGET_S,
    }
    for run, s in big.items():
        print(f"{run}: {s:.2f} s in allocation before the run started "
              f"({small[run]:.2f} s with {BASELINE_RUNS} runs)")  # fmt: skip
    ratio = result["ratio_mean_vs_baseline"]
    print(f"max {result['max_s']:.2f} s (target <= {TARGET_S} s); mean ratio "
          f"{args.runs} runs / {BASELINE_RUNS} runs: {ratio:.2f}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if result["max_s"] > TARGET_S and not args.no_fail:
        sys.exit(1)


if __name__ == "__main__":
    main()
