"""A run's status and reason: what its log says, and how its process ended. One rule,
used for the runs table, for retry decisions and for attempt histories.

In order:
1. The process was ended by llmbench's time limit or watchdog, or by the scheduler's time
   limit, after the log was complete (final iteration and the whole window): the numbers
   stand, the run is a ``success`` with reason ``teardown_hang``. Not retried.
2. Ended by the time limit: ``timeout``; by the watchdog: ``hang`` (``no_progress``).
3. Killed from outside otherwise (scancel, node failure): ``failed`` with the scheduler's
   reason; ended because the Snakemake process running it was gone: ``failed`` with
   ``workflow_lost``.
4. A non-zero exit is never a success: ``failed`` with ``exit_code_<n>``.
5. Otherwise the log's own verdict.
"""

from __future__ import annotations

from llmbench.job.supervise import Ended
from llmbench.parsers.vocabulary import Reason, Status


def run_outcome(
    log_status: str,
    log_reason: str = "",
    exit_code: int | None = None,
    killed_reason: str = "",
    ended_by: str = "",
) -> tuple[str, str]:
    """(status, reason) of one attempt (see the module docstring)."""
    timed_out = ended_by == Ended.TIMEOUT or killed_reason == Reason.TIME_LIMIT.value
    if log_status == Status.SUCCESS.value and (timed_out or ended_by == Ended.HANG):
        return Status.SUCCESS.value, Reason.TEARDOWN_HANG.value
    if timed_out:
        return Status.TIMEOUT.value, Reason.TIME_LIMIT.value
    if ended_by == Ended.HANG:
        return Status.HANG.value, Reason.NO_PROGRESS.value
    if killed_reason:
        return Status.FAILED.value, killed_reason
    if ended_by == Ended.WORKFLOW_LOST:
        return Status.FAILED.value, Reason.WORKFLOW_LOST.value
    if exit_code not in (0, None) and log_status != Status.FAILED.value:
        return Status.FAILED.value, f"exit_code_{int(exit_code)}"
    return log_status, log_reason or ""
