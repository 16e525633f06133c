"""A GPU training job's allocation, as snakemake-executor-plugin-slurm really submits it to
the local cluster: exclusive nodes, all of their memory, all of their CPUs (the reference's
``--exclusive --mem=0``, no ``--cpus-per-task``), read back with ``scontrol show job``.

The job is one rule with exactly the training rule's resources (``llmbench.launch.slurm``), in a
small Snakefile, because the training rule needs an image or a framework venv first; a
second test pins the training rule to the same resource names."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmbench.core.config import run_specs, validate_config
from llmbench.launch.slurm import slurm_resources
from tests.helpers import REPO
from tests.slurm.conftest import SLURM_TEST_OVERRIDES

pytestmark = pytest.mark.slurm

SWEEP = {"workload": "llama3.1-nemo", "sizes": ["8b"], "dtypes": ["bf16"], "gpu_type": "h100"}
NODE_CPUS, NODE_MEM_MB = 16, 64000
"""What each fake node of tests/slurm/cluster.sh offers."""

SNAKEFILE = """
import os
from llmbench.core.config import run_specs, validate_config
from llmbench.launch.slurm import SBATCH_ENVIRONMENT, slurm_resources

for name, value in SBATCH_ENVIRONMENT.items():  # as workflow/rules/common.smk
    os.environ.setdefault(name, value)
(SPEC,) = run_specs(validate_config({{"sweeps": [{sweep}], "launcher": "srun"}}))
R = slurm_resources(SPEC, {{}}, 1)

rule allocation:
    output:
        "scontrol.txt",
    resources:
{resources}
    shell:
        "scontrol show job $SLURM_JOB_ID > {{output}}"
"""


def _megabytes(text: str) -> float:
    """Slurm's memory notation (``64000M``, ``62.50G``) in MB."""
    scale = {"M": 1, "G": 1024, "T": 1024 * 1024}
    return float(text[:-1]) * scale[text[-1]]


def _resource_names() -> list[str]:
    (spec,) = run_specs(validate_config({"sweeps": [{**SWEEP, "scales": [8]}]}))
    return list(slurm_resources(spec, {}, 1))


def test_the_training_rule_asks_every_allocation_resource() -> None:
    rule = (REPO / "workflow/rules/train.smk").read_text()
    for name in _resource_names():
        assert f'{name}=SWEEP.train_resource("{name}")' in rule, name


@pytest.mark.parametrize("scale", [8, 16])
def test_gpu_job_gets_whole_nodes(slurm_cluster, tmp_path: Path, scale: int) -> None:
    sweep = {**SWEEP, "scales": [scale]}
    resources = "\n".join(f'        {n}=R["{n}"],' for n in _resource_names())
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(SNAKEFILE).format(sweep=repr(sweep), resources=resources)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(REPO / "profiles/slurm"),
         *SLURM_TEST_OVERRIDES, "--directory", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    job = (tmp_path / "scontrol.txt").read_text()
    fields = dict(re.findall(r"(\w[\w/:]*)=(\S+)", job))
    nodes = scale // 8
    assert fields["NumNodes"] == str(nodes) and fields["OverSubscribe"] == "NO", job
    # All CPUs and all memory of each node, 8 tasks (GPUs) per node.
    assert fields["NumCPUs"] == str(NODE_CPUS * nodes), job
    tres = dict(kv.split("=", 1) for kv in fields["TRES"].split(","))
    assert _megabytes(tres["mem"]) == NODE_MEM_MB * nodes, job
    assert fields["TresPerNode"] == "gres:gpu:8", job
    assert fields["NumTasks"] == str(8 * nodes), job
    assert fields["MinMemoryNode"] == "0", job  # --mem=0: the node's whole memory
