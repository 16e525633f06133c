"""Variants as additions to one launch command: a rank prefix, environment, entry arguments.

The training command itself is never copied: ``profile`` prefixes it with Nsight Systems,
``nccltrace`` only sets NCCL's logging, the checkpoint variants pass folders to the entry
point (which maps them onto the framework's own settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmbench.errors import LaunchError
from llmbench.launch.words import Raw, Word
from llmbench.runspec import RunSpec

VARIANTS = ("perf", "profile", "nccltrace", "ckpt-save", "ckpt-load")

NSYS_PREFIX: tuple[str, ...] = (
    "nsys", "profile", "-s", "none", "-t", "cuda,nvtx",
    "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite=true",
)  # fmt: skip
"""Sampling off, CUDA + NVTX traces, recording only between the trainer's
cudaProfilerStart/Stop calls (placed at the profiled steps by the entry point)."""

NSYS_OUTPUT = "profile_%q{SLURM_JOB_ID}_%q{SLURM_NODEID}_%q{SLURM_LOCALID}"
"""One report per rank; nsys expands ``%q{VAR}`` from each task's own environment."""

NCCL_TRACE_ENV = (("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "COLL"))


@dataclass(frozen=True)
class VariantParts:
    """What a variant adds around the one training command."""

    prefix: list[Word] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    entry_args: list[Word] = field(default_factory=list)
    needs_stage: bool = False


def profile_steps(spec: RunSpec) -> tuple[int, int]:
    """Nsight start/stop steps (inclusive) from the catalog's document defaults.

    A document that states none (MaxText) profiles the steps after the timing window,
    where the profiler cannot disturb the measured iterations.
    """
    source = spec.model.get("source")
    if source:
        from llmbench.catalog import load_catalog

        profiling = load_catalog().document(source).profiling
        if profiling is not None:
            return profiling.start_step, profiling.stop_step
    return spec.window[1] + 1, spec.steps


def checkpoint_dir(run_id: str) -> str:
    """Checkpoints are large: they go to the shared stage folder, one folder per run."""
    return f"$LLMBENCH_STAGE_PATH/checkpoints/{run_id}"


def variant_parts(spec: RunSpec) -> VariantParts:
    if spec.variant == "perf":
        return VariantParts()
    if spec.variant == "profile":
        start, stop = profile_steps(spec)
        return VariantParts(
            prefix=[*NSYS_PREFIX, "-o", NSYS_OUTPUT],
            entry_args=["--profile-steps", str(start), str(stop)],
        )
    if spec.variant == "nccltrace":
        return VariantParts(env=list(NCCL_TRACE_ENV))
    if spec.variant == "ckpt-save":
        return VariantParts(
            entry_args=["--save-checkpoint", Raw(f'"{checkpoint_dir(spec.run_id)}"')],
            needs_stage=True,
        )
    if spec.variant == "ckpt-load":
        # Default: what the matching ckpt-save run wrote; LOAD_CHECKPOINT_PATH (the
        # spec documents' variable) points elsewhere.
        saved = checkpoint_dir(spec.run_id.removesuffix("_ckpt-load") + "_ckpt-save")
        return VariantParts(
            entry_args=["--load-checkpoint", Raw(f'"${{LOAD_CHECKPOINT_PATH:-{saved}}}"')],
            needs_stage=True,
        )
    raise LaunchError(f"variant={spec.variant!r}: allowed: {', '.join(VARIANTS)}")
