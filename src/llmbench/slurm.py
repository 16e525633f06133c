"""Slurm resources of a training job, as snakemake-executor-plugin-slurm reads them.

The plugin maps ``nodes`` + ``tasks_per_node`` + ``mpi="srun"`` to a multi-node
allocation (it refuses ``mpi`` with one task per node, so one rank per node asks for
``nodes`` + ``tasks`` instead), ``gres`` to ``--gres`` (per node), ``runtime`` (minutes) to
``-t``, and appends ``slurm_extra`` to sbatch's arguments through a shell: the site extras
from the config are quoted one by one, so no value can break out. Constraint and QoS are
the plugin's own resources (set in the profile), which it quotes itself.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from llmbench.plan import runtime_limit_min
from llmbench.runspec import RunSpec

EXTRA_OPTIONS = ("reservation", "nodelist", "exclude", "segment")


def slurm_extra(extras: Mapping[str, Any]) -> str:
    """sbatch options for the site extras, each value shell-quoted."""
    words = [f"--{key}={extras[key]}" for key in EXTRA_OPTIONS if extras.get(key) is not None]
    if extras.get("exclusive"):
        words.append("--exclusive")
    return shlex.join(words)


def slurm_resources(
    spec: RunSpec,
    extras: Mapping[str, Any],
    threads_per_rank: int,
    runtime_min: int | None = None,
) -> dict[str, Any]:
    """Resources of one training job: one task per GPU (per rank on CPUs)."""
    mpi = spec.gpus_per_node > 1
    resources: dict[str, Any] = {
        "nodes": spec.nodes,
        # falsy values are left out of sbatch's arguments by the plugin
        "tasks_per_node": spec.gpus_per_node if mpi else 0,
        "tasks": 0 if mpi else spec.gpus,
        "mpi": "srun" if mpi else "",
        "cpus_per_task": threads_per_rank if spec.gpu_type == "cpu" else 1,
        "runtime": runtime_min or runtime_limit_min(spec),
        "slurm_extra": slurm_extra(extras),
    }
    # CPU ranks ask for no GPUs: an empty gres is left out of sbatch's arguments.
    resources["gres"] = f"gpu:{spec.gpus_per_node}" if spec.gpu_type != "cpu" else ""
    return resources
