"""The ``srun`` launcher: ranks started by Slurm inside an allocation, optionally in an
enroot image through pyxis (``--container-*`` options)."""

from __future__ import annotations

from llmbench.errors import LaunchError
from llmbench.launch.entry import CONTAINER_SRC
from llmbench.launch.shell import Raw, Word
from llmbench.runspec import RunSpec
from llmbench.stage import ImageImport

MASTER_PORT_BASE = 20000
MASTER_PORT_SPAN = 20000
"""MASTER_PORT = base + job id mod span: two jobs sharing a node rarely collide, and the
port stays below the usual ephemeral range."""

STAGE_CHECK = ': "${LLMBENCH_STAGE_PATH:?set LLMBENCH_STAGE_PATH to the shared stage folder}"'

PASSED_BY_NAME = ("HF_TOKEN",)
"""Secrets handed to the container by name only; their values never reach a file."""


def tasks_per_node(spec: RunSpec) -> int:
    """One task per GPU (per CPU rank for the embedded workload), spread evenly."""
    if spec.nodes < 1 or spec.gpus % spec.nodes:
        raise LaunchError(
            f"run {spec.run_id}: gpus={spec.gpus} cannot be spread evenly over "
            f"nodes={spec.nodes}; allowed: a multiple of nodes"
        )
    return spec.gpus // spec.nodes


def allocation_lines() -> list[str]:
    """MASTER_ADDR/MASTER_PORT from the allocation, knowing only SLURM_JOB_ID."""
    return [
        "# The executor plugin keeps only SLURM_JOB_ID in a rule's shell (it strips SLURM_*),",
        "# so the allocation's nodes come from the controller.",
        ': "${SLURM_JOB_ID:?launcher srun runs inside a Slurm allocation}"',
        'NODELIST="$(squeue -h -j "$SLURM_JOB_ID" -o %N)"',
        "# LLMBENCH_MASTER_ADDR overrides where node names do not resolve (docs/slurm.md).",
        'export MASTER_ADDR="${LLMBENCH_MASTER_ADDR:-$(scontrol show hostnames "$NODELIST"'
        ' | sed -n 1p)}"',
        "export MASTER_PORT="
        f'"${{LLMBENCH_MASTER_PORT:-$(({MASTER_PORT_BASE} + SLURM_JOB_ID % {MASTER_PORT_SPAN}))}}"',
    ]


def container_lines(imported: ImageImport) -> list[str]:
    """Shell lines that set IMAGE and LLMBENCH_SRC for the ``--container-*`` options."""
    return [
        STAGE_CHECK,
        "# LLMBENCH_IMAGE overrides the image imported into the stage folder (docs/slurm.md).",
        f'IMAGE="${{LLMBENCH_IMAGE:-$LLMBENCH_STAGE_PATH/images/{imported.file_name}}}"',
        'LLMBENCH_SRC="$("$PYTHON" -c \'import llmbench, pathlib;'
        " print(pathlib.Path(llmbench.__file__).parents[1])')\"",
    ]


def srun_words(spec: RunSpec, container_env: list[str]) -> list[list[Word]]:
    """``srun`` with its options, then the pyxis container options (if any)."""
    launcher: list[Word] = [
        "srun",
        f"--nodes={spec.nodes}",
        f"--ntasks-per-node={tasks_per_node(spec)}",
        "--kill-on-bad-exit=1",  # one failed rank ends the step instead of hanging it
    ]
    if spec.container == "none":
        return [launcher]
    if spec.container != "enroot":
        raise LaunchError(f"container={spec.container!r}: allowed: none, enroot")
    mounts = f"$LLMBENCH_SRC:{CONTAINER_SRC}:ro,$PWD:$PWD,$LLMBENCH_STAGE_PATH:$LLMBENCH_STAGE_PATH"
    container: list[Word] = [
        Raw('--container-image="$IMAGE"'),
        Raw(f'--container-mounts="{mounts}"'),
        Raw('--container-workdir="$PWD"'),
        "--no-container-mount-home",
        "--container-env=" + ",".join([*PASSED_BY_NAME, *container_env]),
    ]
    return [launcher, container]
