"""The ``srun`` launcher: ranks started by Slurm inside an allocation, optionally in an
enroot image through pyxis (``--container-*`` options)."""

from __future__ import annotations

from llmbench.core.run_folder import SAMPLES_PATTERN
from llmbench.core.runspec import RunSpec
from llmbench.core.site_fit import needs_hf_home
from llmbench.core.stage import ImageImport
from llmbench.errors import LaunchError
from llmbench.launch.entry import CONTAINER_SRC
from llmbench.launch.shell import Raw, Word

MASTER_PORT_BASE = 20000
MASTER_PORT_SPAN = 20000
"""MASTER_PORT = base + job id mod span: two jobs sharing a node rarely collide, and the
port stays below the usual ephemeral range."""

STAGE_CHECK = ': "${LLMBENCH_STAGE_PATH:?set LLMBENCH_STAGE_PATH to the shared stage folder}"'

PASSED_BY_NAME = ("HF_TOKEN",)
"""Secrets handed to the container by name only; their values never reach a file."""
HF_HOME_CHECK = (
    ': "${HF_HOME:?set hf_home in the site file or HF_HOME: the Hugging Face cache '
    'holding the model config this recipe reads offline}"'
)


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


PYXIS_OPTIONS = ("--container-writable",)
"""Reference srun options that exist only with a container (pyxis)."""

VBOOST = "sudo -n nvidia-smi boost-slider --vboost 1"
"""Steers power to the tensor cores (the reference's PerfEnvPlugin(enable_vboost=True));
``-n``: fail instead of waiting for a password where sudo needs one."""


def allocation_comment(spec: RunSpec) -> list[str]:
    """The job's allocation as the reference asks it (sbatch options from the job's Slurm
    resources, ``llmbench.launch.slurm.slurm_resources``), stated where a reader looks."""
    sbatch = spec.parity.sbatch
    if not sbatch:
        return []
    words = ["--exclusive"] if sbatch.get("exclusive") else []
    words += ["--mem=0 (all of the node's memory)"] if sbatch.get("mem") == "0" else []
    if "cpus_per_task" in sbatch and sbatch["cpus_per_task"] is None:
        words.append("no --cpus-per-task (the node's CPUs shared by its ranks)")
    words += [f"--segment={sbatch['segment']}"] if sbatch.get("segment") else []
    return ["# Allocation as the reference: sbatch " + ", ".join(words) + "."]


def parity_setup_lines(spec: RunSpec) -> list[str]:
    """Once-per-node setup the reference runs before the ranks start (vboost)."""
    if not spec.parity.node.get("vboost"):
        return []
    return [
        "# vboost once per node, as the reference; a node that refuses it only logs a warning.",
        f"srun --nodes={spec.nodes} --ntasks-per-node=1 {VBOOST} \\",
        '    || echo "llmbench: vboost not set (needs passwordless sudo)" >&2',
    ]


def numactl_prefix(spec: RunSpec) -> list[Word]:
    """Each rank bound to its NUMA node, ``SLURM_LOCALID / divisor`` with the reference's
    divisor per GPU type (the ``numactl`` setting's value); srun sets SLURM_LOCALID per
    task, so a small shell evaluates it in the task."""
    divisor = spec.parity.prefix.get("numactl")
    if not divisor:
        return []
    node = f"$((SLURM_LOCALID / {int(divisor)}))"
    script = f'exec numactl --cpunodebind={node} --membind={node} "$@"'
    return ["bash", "-c", script, "numactl"]


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
    passed = list(PASSED_BY_NAME)
    if needs_hf_home(spec):  # the recipe reads the model's config from the cache, offline
        mounts += ",$HF_HOME:$HF_HOME"
        passed.append("HF_HOME")
    container: list[Word] = [
        Raw('--container-image="$IMAGE"'),
        Raw(f'--container-mounts="{mounts}"'),
        Raw('--container-workdir="$PWD"'),
        "--no-container-mount-home",
        *(o for o in PYXIS_OPTIONS if spec.parity.srun.get(o)),
        "--container-env=" + ",".join([*passed, *container_env]),
    ]
    return [launcher, container]


def sampler_lines(spec: RunSpec) -> list[str]:
    """Start one telemetry sampler per node beside the ranks (when the runner asks for
    telemetry) and stop it when the training step ends, however it ends. The sampler
    runs on the host, outside the container; it asks for the node's GPUs (shared with the
    ranks through ``--overlap``) so that a cgroup-constrained step still sees them."""
    sampler = (
        f"srun --overlap --nodes={spec.nodes} --ntasks-per-node=1 "
        f"--gres=gpu:{tasks_per_node(spec)} "
        f'"$PYTHON" -m llmbench.telemetry.sampler --out "$PWD/{SAMPLES_PATTERN}" '
        '--period-ms "$LLMBENCH_TELEMETRY_PERIOD_MS" --root "$LLMBENCH_TELEMETRY_ROOT" --gpu &'
    )
    return [
        "# Telemetry (docs/telemetry.md): a sampler per node, stopped after the ranks.",
        'if [[ -n "${LLMBENCH_TELEMETRY:-}" ]]; then',
        f"    {sampler}",
        "    SAMPLERS=$!",
        '    trap \'kill -TERM "$SAMPLERS" || true; wait "$SAMPLERS" || true\' EXIT',
        "fi",
    ]
