"""Variants as additions to one launch command: a rank prefix, environment, entry arguments.

The training command itself is never copied: ``profile`` prefixes it with Nsight Systems,
``nccltrace`` only adds NCCL's collective trace to its debug output
(``llmbench.launch.nccl_debug``), the checkpoint variants pass folders to the entry
point (which maps them onto the framework's own settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmbench.core.profiling import default_profile, parse_ranks
from llmbench.core.run_folder import NSYS_REPORT_PATTERN as NSYS_OUTPUT
from llmbench.core.run_folder import RANK_WRAPPER
from llmbench.core.runspec import RunSpec
from llmbench.core.stage import save_run_of
from llmbench.errors import LaunchError
from llmbench.launch.shell import Raw, Word, join

VARIANTS = ("perf", "profile", "nccltrace", "ckpt-save", "ckpt-load")

NSYS_PREFIX: tuple[str, ...] = (
    "nsys", "profile", "-s", "none", "-t", "cuda,nvtx",
    "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite=true",
)  # fmt: skip
"""Sampling off, CUDA + NVTX traces, recording only between the trainer's
cudaProfilerStart/Stop calls (placed at the profiled steps by the entry point)."""


@dataclass(frozen=True)
class VariantParts:
    """What a variant adds around the one training command."""

    prefix: list[Word] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    entry_args: list[Word] = field(default_factory=list)
    needs_stage: bool = False
    setup_lines: list[str] = field(default_factory=list)
    """Shell lines launch.sh runs before srun (e.g. writing the rank-selecting wrapper)."""


def nsys_words(spec: RunSpec) -> list[Word]:
    gpu_metrics = ["--gpu-metrics-devices=all"] if profile_settings(spec)["gpu_metrics"] else []
    return [*NSYS_PREFIX, *gpu_metrics, "-o", NSYS_OUTPUT]


def profile_prefix(spec: RunSpec) -> tuple[list[Word], list[str]]:
    """The rank prefix and setup lines of a profile run.

    Every rank profiled: ``nsys profile ...`` prefixes the command. A subset (the spec's
    "0-8"): each task runs a small wrapper that execs nsys on the selected global ranks
    (``SLURM_PROCID``, set by srun per task) and the bare command on the others.
    """
    nsys = nsys_words(spec)
    chosen = profile_settings(spec)["ranks"]
    ranks = parse_ranks(chosen, spec.gpus)
    if len(ranks) == spec.gpus:
        return nsys, []
    listed = ",".join(map(str, ranks))
    lines = [
        f"# Profile global ranks {chosen} only; the other ranks run unprofiled.",
        f"cat > {RANK_WRAPPER} <<'EOF'",
        f'case ",{listed}," in',
        f'*",${{SLURM_PROCID:?srun sets SLURM_PROCID}},"*) exec {join(nsys)} "$@" ;;',
        '*) exec "$@" ;;',
        "esac",
        "EOF",
    ]
    return ["bash", RANK_WRAPPER], lines


def profile_settings(spec: RunSpec) -> dict[str, Any]:
    """The spec's resolved settings (config over document), else the document's."""
    return spec.profile or default_profile(spec.model.get("source"), spec.window[1], spec.steps)


def profile_steps(spec: RunSpec) -> tuple[int, int]:
    start, stop = profile_settings(spec)["steps"]
    return int(start), int(stop)


def checkpoint_dir(run_id: str) -> str:
    """Checkpoints are large: they go to the shared stage folder, one folder per run."""
    return f"$LLMBENCH_STAGE_PATH/checkpoints/{run_id}"


def variant_parts(spec: RunSpec) -> VariantParts:
    if spec.variant == "perf":
        return VariantParts()
    if spec.variant == "profile":
        start, stop = profile_steps(spec)
        prefix, lines = profile_prefix(spec)
        return VariantParts(
            prefix=prefix,
            entry_args=["--profile-steps", str(start), str(stop)],
            setup_lines=lines,
        )
    if spec.variant == "nccltrace":  # its COLL subsystem: llmbench.launch.nccl_debug
        return VariantParts()
    if spec.variant == "ckpt-save":
        return VariantParts(
            entry_args=["--save-checkpoint", Raw(f'"{checkpoint_dir(spec.run_id)}"')],
            needs_stage=True,
        )
    if spec.variant == "ckpt-load":
        # Default: what the matching ckpt-save run wrote; LOAD_CHECKPOINT_PATH (the
        # spec documents' variable) points elsewhere.
        saved = checkpoint_dir(save_run_of(spec.run_id))
        return VariantParts(
            entry_args=["--load-checkpoint", Raw(f'"${{LOAD_CHECKPOINT_PATH:-{saved}}}"')],
            needs_stage=True,
        )
    raise LaunchError(f"variant={spec.variant!r}: allowed: {', '.join(VARIANTS)}")
