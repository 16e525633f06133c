"""How long one run may take, and how long it may go without progress: one answer per run.

- time limit: the reference's, as parity data (``catalog/parity.yaml``, kind ``limit``:
  e.g. DeepSeek V3 45 minutes, 90 on H100; each with its source line, or declared as
  llmbench's own value with its reason); a sweep entry's ``runtime_min``, else the
  config's, wins over it. 10 minutes for the embedded model; 30 for a framework run the
  data names no limit for. It bounds the run on every launcher (llmbench ends it); a
  Slurm job gets a few minutes more (``llmbench.launch.slurm.job_time_min``), so that
  llmbench, not Slurm, records the timeout.
- startup allowance: how long the log may stay silent before the first training step
  (container start, imports, model build, first compilation).
- stall allowance: how long the log may stay silent after that: longer than the slowest
  expected step, and long enough for a checkpoint save or load in the ckpt variants.
"""

from __future__ import annotations

from dataclasses import dataclass

TIME_LIMIT_MIN_WITHOUT_REFERENCE = 30
EMBEDDED_TIME_LIMIT_MIN = 10

EMBEDDED_STARTUP_S = 300
EMBEDDED_STALL_S = 120
FRAMEWORK_STARTUP_S = 1800
FRAMEWORK_STALL_S = 600
CHECKPOINT_STALL_S = 1800
CHECKPOINT_VARIANTS = ("ckpt-save", "ckpt-load")


@dataclass(frozen=True)
class RunLimits:
    time_limit_s: int
    startup_s: int
    stall_s: int


def default_limits(framework: str, variant: str, reference_min: int | None = None) -> RunLimits:
    """The limits of a run when the config sets none: the reference's time limit
    (``reference_min``, from the run's parity data) where there is one."""
    if framework == "torch":
        return RunLimits(EMBEDDED_TIME_LIMIT_MIN * 60, EMBEDDED_STARTUP_S, EMBEDDED_STALL_S)
    minutes = reference_min or TIME_LIMIT_MIN_WITHOUT_REFERENCE
    stall = CHECKPOINT_STALL_S if variant in CHECKPOINT_VARIANTS else FRAMEWORK_STALL_S
    return RunLimits(minutes * 60, FRAMEWORK_STARTUP_S, stall)


def resolve_limits(
    framework: str,
    variant: str,
    reference_min: int | None = None,
    time_limit_min: int | None = None,
    startup_s: int | None = None,
    stall_s: int | None = None,
) -> RunLimits:
    """The defaults, with each value the config sets instead."""
    base = default_limits(framework, variant, reference_min)
    return RunLimits(
        time_limit_s=time_limit_min * 60 if time_limit_min else base.time_limit_s,
        startup_s=startup_s or base.startup_s,
        stall_s=stall_s or base.stall_s,
    )
