"""The ``launch.sh`` of one run attempt on this machine (local) or a Slurm allocation
(srun), and the header every launcher's script starts with."""

from __future__ import annotations

from llmbench import __version__
from llmbench.core.devices import device
from llmbench.core.run_folder import LOG as LOG_FILE
from llmbench.core.runspec import RunSpec
from llmbench.core.site_fit import launcher_refusal, needs_hf_home
from llmbench.core.stage import image_import
from llmbench.errors import LaunchError
from llmbench.launch.entry import (
    ENTRY_MODULES,
    SPEC_FILE,
    device_args,
    entry_command,
    omp_threads,
    rank_environment,
)
from llmbench.launch.nccl_debug import nccl_debug_env
from llmbench.launch.shell import Word, join
from llmbench.launch.srun import (
    HF_HOME_CHECK,
    STAGE_CHECK,
    allocation_comment,
    allocation_lines,
    container_lines,
    numactl_prefix,
    parity_setup_lines,
    sampler_lines,
    srun_words,
)
from llmbench.launch.variants import variant_parts

__all__ = ["LOG_FILE", "SPEC_FILE", "embedded_entry_point", "header", "render_local", "render_srun"]


def embedded_entry_point(spec_file: str = SPEC_FILE, framework: str = "torch") -> list[str]:
    """The local trainer's command (the embedded one by default), after the interpreter."""
    return ["-m", ENTRY_MODULES[framework], "--spec", spec_file]


def local_rank_launcher(spec: RunSpec) -> list[str]:
    """torchrun on this machine: one process per rank, as a cluster job starts ranks."""
    return [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={spec.gpus}",
    ]


def header(spec: RunSpec, rerun: str) -> list[str]:
    threads = omp_threads(spec)
    return [
        "#!/usr/bin/env bash",
        f"# llmbench {__version__}: run {spec.run_id}",
        f"# Exactly what this attempt executed; rerun by hand with: {rerun}",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
        *([f"export OMP_NUM_THREADS={threads}"] if threads is not None else []),
        'PYTHON="${LLMBENCH_PYTHON:-python3}"',
    ]


def render_local(spec: RunSpec) -> str:
    refused = launcher_refusal(spec)  # the config check asks the same before submitting
    if refused:
        raise LaunchError(refused)
    entry = embedded_entry_point(framework=spec.framework) + device_args(spec)
    command = local_rank_launcher(spec) + entry
    lines = header(spec, "bash launch.sh") + _nccl_debug_lines(spec)
    return "\n".join([*lines, f'exec "$PYTHON" {join(command)}', ""])


def _nccl_debug_lines(spec: RunSpec) -> list[str]:
    env = nccl_debug_env(spec)
    if not env:
        return []
    return [
        "# NCCL's transport choice, one file per process (docs/transport.md).",
        *(f"export {name}={join([value])}" for name, value in env),
    ]


def image_comment(spec: RunSpec) -> list[str]:
    """Which image the ranks run in, and whether it is the reference's (docs/parity.md)."""
    stack = spec.parity.stack
    if stack is None:
        return []
    verdict = "the reference's" if stack.reference_stack else "not the reference's"
    return [f"# Image {spec.image}: {verdict} ({stack.reference_image})."]


def render_srun(spec: RunSpec) -> str:
    if spec.framework == "torch" and spec.container != "none":
        raise LaunchError(f"run {spec.run_id}: the embedded workload runs with container none")
    parts = variant_parts(spec)
    lines = header(spec, "bash launch.sh (inside a Slurm allocation)")
    imported = image_import(spec)
    if imported is not None:
        lines += image_comment(spec) + container_lines(imported)
    elif parts.needs_stage:
        lines.append(STAGE_CHECK)
    lines += allocation_lines()
    lines += allocation_comment(spec)
    lines += parts.setup_lines
    env = rank_environment(spec)
    if env:
        reference = spec.parity.reference
        lines.append(f"# The reference's environment ({reference}); sources: run_spec.json.")
    if spec.parity.unverified:
        unverified = ", ".join(spec.parity.unverified)
        lines.append(f"# Unverified (the reference's pin is not public): {unverified}.")
    env += parts.env
    lines += [f"export {name}={join([value])}" for name, value in env]
    lines += _nccl_debug_lines(spec)
    env += nccl_debug_env(spec)
    lines += parity_setup_lines(spec)
    lines.append("# HF_TOKEN, if needed, comes from the caller's environment, by name only.")
    if needs_hf_home(spec):
        lines += [
            "# HF_HOME: the site's hf_home, else the caller's (docs/slurm.md).",
            HF_HOME_CHECK,
        ]
    groups: list[list[Word]] = [
        *srun_words(spec, [name for name, _ in env]),
        numactl_prefix(spec),
        parts.prefix,
        entry_command(spec, parts.entry_args),
    ]
    # GPU nodes: samplers beside the ranks; srun is then not exec'd, so the trap stops them.
    sampled = device(spec.gpu_type).nvidia_smi
    if sampled:
        lines += sampler_lines(spec)
    # One option group per line: launcher, container, profiler prefix, rank command.
    head = "" if sampled else "exec "
    lines += [head + " \\\n    ".join(join(g) for g in groups if g), ""]
    return "\n".join(lines)
