"""Why a run failed, read from the text of its log, and how its job ended.

Each marker is a pattern known from the tool that prints it (PyTorch, NCCL, Slurm,
pyxis/enroot, CPython, NeMo's straggler detection, NeMo-Run). ``FailureTracker`` is fed
only the lines that contain one of ``FAILURE_NEEDLES`` and keeps the first detail seen for
each reason; ``root_cause`` picks one reason by ``FAILURE_PRIORITY``. A restart inside the
log (``restart``) closes an attempt: its markers move to ``earlier`` and no longer decide
the status. ``JOB_OUTCOME`` reads the launcher's last word on the job.
"""

from __future__ import annotations

import re

from llmbench.parsers.vocabulary import FAILURE_PRIORITY, Reason

FAILURE_NEEDLES: tuple[bytes, ...] = (
    b"rror",  # Error and error: exception lines, `slurmstepd: error:`, `srun: error:`
    b"Exception",
    b"Traceback",
    b"atchdog",  # Watchdog and watchdog
    b"CANCELLED",
    b"pyxis",
    b"enroot",
    b"Detected stragglers",
)
"""Few, because each needle costs one search of the log's tail; every marker line of
``_MARKERS`` carries one of them (the Slurm and OOM lines say `error`/`Error`)."""

_MARKERS: tuple[tuple[Reason, re.Pattern[bytes]], ...] = (
    (Reason.NODE_FAILURE, re.compile(rb"DUE TO NODE FAILURE|srun: error: Node failure")),
    (
        Reason.CUDA_OOM,
        re.compile(rb"CUDA out of memory|OutOfMemoryError|RESOURCE_EXHAUSTED: Out of memory"),
    ),
    (Reason.HOST_OOM, re.compile(rb"oom[-_]kill")),
    (
        Reason.CONTAINER_ERROR,
        re.compile(rb"(?i)(?:pyxis|enroot)\S*:.*(?:error|fail|couldn't|cannot|not found)"),
    ),
    (
        Reason.NCCL_TIMEOUT,
        re.compile(rb"(?i)watchdog.*(?:timeout|timed out|got stuck)"),
    ),
    (Reason.STRAGGLER, re.compile(rb"Detected stragglers")),
    (Reason.TIME_LIMIT, re.compile(rb"DUE TO TIME LIMIT")),
    (Reason.CANCELLED, re.compile(rb"CANCELLED AT")),
    (Reason.NONZERO_EXIT, re.compile(rb"srun: error: .*Exited with exit code [1-9]")),
)
_TRACEBACK = re.compile(rb"Traceback \(most recent call last\)")
# `RuntimeError: ...`, `torch.OutOfMemoryError: ...`, a bare `Exception: ...`, after any
# prefix (`0: `, `[default0]:`)
_EXCEPTION = re.compile(
    rb"(?:^|[\s:\]>])((?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Interrupt|Exit))"
    rb"(?::|\s*$)"
)
_DETAIL_BYTES = 200
JOB_OUTCOME = re.compile(rb"\bJob (\S{1,500}) finished: (SUCCEEDED|FAILED)\b")
"""NeMo-Run's last line for a job: ``Job <id> finished: SUCCEEDED`` (or ``FAILED``)."""


def _detail(line: bytes) -> str:
    return line.strip()[:_DETAIL_BYTES].decode("utf-8", "replace")


class FailureTracker:
    """Collects failure markers and the job's outcome from candidate lines, in file order."""

    def __init__(self) -> None:
        self.details: dict[Reason, str] = {}
        self.earlier: list[tuple[Reason, str]] = []  # root causes of restarted attempts
        self.job_outcome = ""  # the last `Job ... finished: X` word, "" when none
        self._in_traceback = False

    def outcome(self, line: bytes) -> None:
        """A NeMo-Run job outcome line; FAILED is also a (last-resort) failure marker."""
        match = JOB_OUTCOME.search(line)
        if match is None:
            return
        self.job_outcome = match.group(2).decode("ascii")
        if self.job_outcome == "FAILED":
            self.details.setdefault(Reason.JOB_FAILED, _detail(line))

    def restart(self) -> None:
        """The job restarted: what failed so far belongs to the attempt that ended."""
        cause = self.root_cause()
        if cause[0] is not Reason.NONE:
            self.earlier.append(cause)
        self.details.clear()
        self._in_traceback = False

    def feed(self, line: bytes) -> None:
        for reason, pattern in _MARKERS:
            if reason not in self.details and pattern.search(line):
                self.details[reason] = _detail(line)
        if _TRACEBACK.search(line):
            self._in_traceback = True
            return
        if self._in_traceback and Reason.PYTHON_EXCEPTION not in self.details:
            match = _EXCEPTION.search(line)
            if match:
                # the first exception after a traceback is the original one
                self.details[Reason.PYTHON_EXCEPTION] = match.group(1).decode("ascii")

    def root_cause(self) -> tuple[Reason, str]:
        for reason in FAILURE_PRIORITY:
            if reason in self.details:
                return reason, self.details[reason]
        return Reason.NONE, ""
