"""How long one run may take, and how long it may go without progress: one answer per run.

- time limit: the spec's 30 minutes for 8B/70B-class runs and 2 hours for 405B (340B runs
  at the same scales, so it gets the 405B limit); 10 minutes for the embedded model. It
  bounds the run on every launcher (llmbench ends it); a Slurm job gets a few minutes
  more (``llmbench.launch.slurm.job_time_min``), so that llmbench, not Slurm, records the timeout.
- startup allowance: how long the log may stay silent before the first training step
  (container start, imports, model build, first compilation).
- stall allowance: how long the log may stay silent after that: longer than the slowest
  expected step, and long enough for a checkpoint save or load in the ckpt variants.
"""

from __future__ import annotations

from dataclasses import dataclass

TIME_LIMIT_MIN_DEFAULT = 30
TIME_LIMIT_MIN_BY_SIZE = {"405b": 120, "405b-proxy": 120, "340b": 120}
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


def default_limits(framework: str, size: str, variant: str) -> RunLimits:
    """The limits of a run when the config sets none."""
    if framework == "torch":
        return RunLimits(EMBEDDED_TIME_LIMIT_MIN * 60, EMBEDDED_STARTUP_S, EMBEDDED_STALL_S)
    minutes = TIME_LIMIT_MIN_BY_SIZE.get(size, TIME_LIMIT_MIN_DEFAULT)
    stall = CHECKPOINT_STALL_S if variant in CHECKPOINT_VARIANTS else FRAMEWORK_STALL_S
    return RunLimits(minutes * 60, FRAMEWORK_STARTUP_S, stall)


def resolve_limits(
    framework: str,
    size: str,
    variant: str,
    time_limit_min: int | None = None,
    startup_s: int | None = None,
    stall_s: int | None = None,
) -> RunLimits:
    """The defaults, with each value the config sets instead."""
    base = default_limits(framework, size, variant)
    return RunLimits(
        time_limit_s=time_limit_min * 60 if time_limit_min else base.time_limit_s,
        startup_s=startup_s or base.startup_s,
        stall_s=stall_s or base.stall_s,
    )
