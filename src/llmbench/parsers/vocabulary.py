"""The fixed words a parsed log is described with: frameworks, statuses and reasons.

Every value here is written to tables and JSON, so they are plain strings (``str`` enums)
and never change meaning; docs/log-formats.md lists them.
"""

from __future__ import annotations

from enum import Enum


class Framework(str, Enum):
    NEMO2 = "nemo2"
    MEGATRON = "megatron"  # Megatron-LM and Megatron-Bridge share the step line
    MAXTEXT = "maxtext"
    UNKNOWN = "unknown"


ITERATION_BASE: dict[Framework, int] = {
    Framework.NEMO2: 0,  # `iteration 0/49` is the first step of 50
    Framework.MEGATRON: 1,  # `iteration 1/50` is the first step of 50
    Framework.MAXTEXT: 0,  # `completed step: 0` is the first step
    Framework.UNKNOWN: 0,
}
"""The number each framework gives its first training step."""


class Status(str, Enum):
    SUCCESS = "success"  # whole window present and the final iteration reached
    INCOMPLETE = "incomplete"  # ran without a failure marker but stopped short
    INVALID = "invalid"  # NaN/inf loss or grad norm, impossible step times, malformed numbers
    FAILED = "failed"  # a failure marker was read; `reason` says which
    NO_DATA = "no_data"  # no step line and no failure marker, or an unreadable file
    # Outcomes of a run that llmbench (or the scheduler) ended, never of a log alone:
    TIMEOUT = "timeout"  # the run's time limit ended it before it finished
    HANG = "hang"  # its log stopped growing for longer than the watchdog allows


class Reason(str, Enum):
    NONE = ""
    # success
    RESTARTED = "restarted"  # completed after the job restarted; `restarts` says how often
    # failed, most specific root cause first (this order breaks ties, see failures.py)
    NODE_FAILURE = "node_failure"
    CUDA_OOM = "cuda_oom"
    HOST_OOM = "host_oom"
    CONTAINER_ERROR = "container_error"
    NCCL_TIMEOUT = "nccl_timeout"
    STRAGGLER = "straggler"  # straggler detection stopped the job
    PYTHON_EXCEPTION = "python_exception"
    TIME_LIMIT = "time_limit"
    CANCELLED = "cancelled"
    NONZERO_EXIT = "nonzero_exit"
    JOB_FAILED = "job_failed"  # the launcher's last word was FAILED, no other marker
    # invalid
    NAN_LOSS = "nan_loss"
    NAN_GRAD_NORM = "nan_grad_norm"
    # a field's number does not end where the field ends (`12,3`, `12\x00.3`): in the
    # window, or a loss or grad norm anywhere
    MALFORMED_NUMBER = "malformed_number"
    BAD_STEP_TIME = "bad_step_time"  # a window step time is NaN, inf, < 1 ms or above a day
    # incomplete
    WINDOW_INCOMPLETE = "window_incomplete"
    WINDOW_TOO_SPARSE = "window_too_sparse"  # the log interval leaves < 2 points in it
    FINAL_ITERATION_MISSING = "final_iteration_missing"
    # no_data
    NO_STEP_LINES = "no_step_lines"
    UNREADABLE = "unreadable"  # not a regular file, or it cannot be read
    LOG_MISSING = "log_missing"  # an attempt's log is gone (deleted during the run)
    # hang
    NO_PROGRESS = "no_progress"
    # success: the log is complete, but the process did not exit and was ended
    TEARDOWN_HANG = "teardown_hang"
    # failed: the Snakemake process running the job was gone, the run was ended with it
    WORKFLOW_LOST = "workflow_lost"


FAILURE_PRIORITY: tuple[Reason, ...] = (
    Reason.NODE_FAILURE,
    Reason.CUDA_OOM,
    Reason.HOST_OOM,
    Reason.CONTAINER_ERROR,
    Reason.NCCL_TIMEOUT,
    Reason.STRAGGLER,
    Reason.PYTHON_EXCEPTION,
    Reason.TIME_LIMIT,
    Reason.CANCELLED,
    Reason.NONZERO_EXIT,
    Reason.JOB_FAILED,
)
"""When a log holds several failure markers, the first in this order is the root cause:
a dead node makes its peers time out in NCCL, an OOM or a straggler abort raises a Python
exception, a hang ends at the time limit, and every failure ends the job as FAILED."""
