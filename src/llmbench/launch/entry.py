"""The command each rank runs: the framework's entry point, reading ``run_spec.json``."""

from __future__ import annotations

from llmbench.core import embedded_workload
from llmbench.core.devices import device
from llmbench.core.run_folder import SPEC as SPEC_FILE
from llmbench.core.runspec import RunSpec
from llmbench.errors import LaunchError
from llmbench.launch.shell import Raw, Word

ENTRY_MODULES = {
    "torch": "llmbench.ranks.embedded.train",
    "nemo2": "llmbench.ranks.entrypoints.nemo2",
    "megatron-bridge": "llmbench.ranks.entrypoints.megatron_bridge",
    "maxtext": "llmbench.ranks.entrypoints.maxtext",
    "megatron-core": "llmbench.ranks.entrypoints.megatron_core",
}
"""Entry point module per ``spec.framework``."""

CONTAINER_SRC = "/opt/llmbench/src"
"""Where the host's llmbench source is mounted inside a container (read-only)."""
FROM_SOURCE = "llmbench/ranks/entrypoints/from_source.py"
"""Runs an entry point from that mount (relative to it)."""


def rank_environment(spec: RunSpec) -> list[tuple[str, str]]:
    """The ranks' environment as the reference sets it (``catalog/parity.yaml`` kind
    ``env``, resolved for the run's launcher): every launcher gives its ranks this list,
    srun through launch.sh, Kubernetes and Run:ai in the workload's manifest."""
    return [(name, str(value)) for name, value in spec.parity.env.items()]


def omp_threads(spec: RunSpec) -> int | None:
    """``OMP_NUM_THREADS`` for llmbench's own workloads (``threads_per_rank``); None for
    the reference's workloads, whose launches set none: the ranks keep PyTorch's default
    (torchrun's 1 on the platforms, as the reference's Run:ai executor)."""
    return None if spec.parity.has_reference else spec.threads_per_rank


def entry_module(spec: RunSpec) -> str:
    if spec.framework not in ENTRY_MODULES:
        raise LaunchError(
            f"framework={spec.framework!r}: no entry point; allowed: {', '.join(ENTRY_MODULES)}"
        )
    return ENTRY_MODULES[spec.framework]


def device_args(spec: RunSpec) -> list[str]:
    """The embedded trainer's device, from the run's device traits: ``--cuda`` (one local
    GPU per rank, NCCL) where the ranks have GPUs, nothing for CPU ranks (gloo). The ranks
    are told, not left to read the device catalog (they load only the standard library)."""
    embedded = spec.framework == embedded_workload.FRAMEWORK
    return ["--cuda"] if embedded and device(spec.gpu_type).has_gpus else []


def entry_command(spec: RunSpec, extra_args: list[Word] | None = None) -> list[Word]:
    """Interpreter + entry point + ``--spec run_spec.json`` + variant arguments.

    In a container the image's ``python3`` runs the entry point from the mounted source
    through ``entrypoints/from_source.py``, so the image needs no llmbench install and
    its own ``PYTHONPATH`` stays untouched.
    """
    module = entry_module(spec)
    if spec.container == "enroot":
        head: list[Word] = ["python3", f"{CONTAINER_SRC}/{FROM_SOURCE}", module]
    else:
        head = [Raw('"$PYTHON"'), "-m", module]
    return [*head, "--spec", SPEC_FILE, *device_args(spec), *(extra_args or [])]
