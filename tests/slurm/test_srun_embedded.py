"""The srun launch path on a real Slurm cluster: 2 nodes x 1 rank, the embedded trainer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.launch.launchers import render_launch_script
from tests.launch.cases import embedded_spec

pytestmark = pytest.mark.slurm

# The batch script runs launch.sh as the Snakemake executor plugin would run a rule:
# every SLURM_* variable except SLURM_JOB_ID (and SLURM_CONF) stripped, and it records
# which node each rank ran on. Fake node names do not resolve: MASTER_ADDR is given.
BATCH = """#!/usr/bin/env bash
set -euo pipefail
for name in $(compgen -e | grep '^SLURM_' | grep -vx SLURM_JOB_ID); do unset "$name"; done
export LLMBENCH_MASTER_ADDR=127.0.0.1
srun --nodes=2 --ntasks-per-node=1 bash -c 'echo "node=$SLURMD_NODENAME"' > nodes.txt
bash launch.sh > train.log 2>&1
"""


def test_srun_embedded_two_nodes(slurm_cluster: Path, tmp_path: Path) -> None:
    spec = embedded_spec("srun", nodes=2)
    assert (spec.nodes, spec.gpus, spec.steps) == (2, 2, 45)
    run_dir = tmp_path / "attempt-1"
    run_dir.mkdir()
    (run_dir / "run_spec.json").write_text(spec.to_json())
    (run_dir / "launch.sh").write_text(render_launch_script(spec))
    (run_dir / "job.sh").write_text(BATCH)
    env = dict(os.environ, LLMBENCH_PYTHON=sys.executable)
    env.pop("SLURM_CONF", None)  # as in a rule: the client finds /etc/slurm/slurm.conf
    proc = subprocess.run(
        ["sbatch", "--wait", "--nodes=2", "--ntasks-per-node=1", "--time=5",
         f"--chdir={run_dir}", "--output=slurm-%j.out", "job.sh"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    log = (run_dir / "train.log").read_text() if (run_dir / "train.log").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n--- train.log ---\n{log[-3000:]}"
    steps = re.findall(r"global_step: (\d+)", log)
    assert len(steps) == 45, log[-3000:]
    assert sorted(int(s) for s in steps) == list(range(45))
    nodes = set(re.findall(r"node=(\S+)", (run_dir / "nodes.txt").read_text()))
    assert nodes == {"n1", "n2"}
    # The training step itself (step 1, after the probe) ran a task on each slurmd.
    job = re.search(r"Submitted batch job (\d+)", proc.stdout)
    assert job, proc.stdout
    for node in ("n1", "n2"):
        slurmd_log = (slurm_cluster / "log" / f"slurmd-{node}.log").read_text()
        assert f"StepId={job.group(1)}.1" in slurmd_log, node
